package renderinventory

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubesprayreleases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
)

// Options are what a run adds to the CR's own variables.
type Options struct {
	// Mirror turns offline mode on: the site's mirror.
	Mirror *offline.Mirror
	// KubernetesVersion the run installs or upgrades to (kube_version), as the controller
	// planned it; empty leaves kubespray's default.
	KubernetesVersion string
	// Groups are the kube_control_plane and etcd groups as the controller planned them for a
	// cluster that exists; empty, they are drawn from the masters.
	Groups Groups
}

// Render is the step's logic without I/O: the inventory for the addressed hosts, and the
// extra variables (kube_pods_subnet from PodSubnet, kube_version, offline mode's with a mirror,
// then the CR's kubespray.extraVars) as JSON. In offline mode the CR may not set offline mode's
// variables: a site without internet access has one mirror.
func Render(p *bpav1.Provisioning, hosts []bpav1.Node, opts Options) (inventory, extraVars []byte, err error) {
	mirror := opts.Mirror
	if errs := p.Validate(); len(errs) > 0 {
		return nil, nil, &bpav1.InvalidError{Kind: "Provisioning", Namespace: p.Namespace, Name: p.Name, Errs: errs}
	}
	inventory, err = Inventory(InventoryInput{
		Cluster: p.Labels[bpav1.ClusterLabel],
		User:    p.Spec.SSH.LoginUser(),
		Hosts:   hosts,
		Groups:  opts.Groups,
	})
	if err != nil {
		return nil, nil, err
	}
	vars := map[string]any{}
	if p.Spec.PodSubnet != "" {
		vars["kube_pods_subnet"] = p.Spec.PodSubnet
	}
	if v := opts.KubernetesVersion; v != "" {
		if _, err := kubesprayreleases.ParseVersion(v); err != nil {
			return nil, nil, fmt.Errorf("the run's Kubernetes version: %w", err)
		}
		vars["kube_version"] = v
	}
	if mirror != nil {
		offlineVars, err := mirror.KubesprayVars()
		if err != nil {
			return nil, nil, err
		}
		maps.Copy(vars, offlineVars)
	}
	if p.Spec.Kubespray != nil {
		for k, v := range p.Spec.Kubespray.ExtraVars {
			var subnet string
			if k == "kube_pods_subnet" && p.Spec.PodSubnet != "" && (json.Unmarshal(v.Raw, &subnet) != nil || subnet != p.Spec.PodSubnet) {
				return nil, nil, fmt.Errorf("spec.kubespray.extraVars[kube_pods_subnet]: %s contradicts spec.PodSubnet %q", v.Raw, p.Spec.PodSubnet)
			}
			if mirror != nil && slices.Contains(offline.VarNames(), k) {
				return nil, nil, fmt.Errorf("spec.kubespray.extraVars[%s]: offline mode sets it to the site's mirror", k)
			}
			// Passed on as the CR holds it: its type (string, number, boolean, list, map) is
			// kubespray's.
			vars[k] = json.RawMessage(v.Raw)
		}
	}
	extraVars, err = json.MarshalIndent(vars, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	return inventory, append(extraVars, '\n'), nil
}
