package renderinventory

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
)

// Render is the step's logic without I/O: the inventory for the addressed hosts, and the
// extra variables (kube_pods_subnet from PodSubnet, offline mode's when mirror is not nil, then
// the CR's kubespray.extraVars) as JSON. In offline mode the CR may not set offline mode's
// variables: a site without internet access has one mirror.
func Render(p *bpav1.Provisioning, hosts []bpav1.Node, mirror *offline.Mirror) (inventory, extraVars []byte, err error) {
	if errs := p.Validate(); len(errs) > 0 {
		return nil, nil, &bpav1.InvalidError{Kind: "Provisioning", Namespace: p.Namespace, Name: p.Name, Errs: errs}
	}
	inventory, err = Inventory(InventoryInput{
		Cluster: p.Labels[bpav1.ClusterLabel],
		User:    p.Spec.SSH.LoginUser(),
		Hosts:   hosts,
	})
	if err != nil {
		return nil, nil, err
	}
	vars := map[string]any{}
	if p.Spec.PodSubnet != "" {
		vars["kube_pods_subnet"] = p.Spec.PodSubnet
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
