// Package testcluster is the test cluster's kubespray configuration: the options that decide
// what kubespray downloads for it, shared by the tool that builds those downloads
// (hack/kubespray-downloads) and the suites that give them to the real kubespray, so that what
// is built is exactly what the runs fetch.
package testcluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// KubesprayVersion is the kubespray release the test cluster is built for (its downloads, their
// pinned modules in hack/tools/kubespray-downloads).
const KubesprayVersion = "v2.30.0"

// KubesprayVars are the test cluster's options, typed as a Provisioning's extraVars.
//
// The three versions differ from kubespray v2.30.0's defaults only because the module proxy
// here does not serve the default's source; each is in kubespray's own checksum table, so
// kubespray accepts it as it is:
//   - etcd 3.5.24, not 3.5.26: the newest 3.5 server the proxy serves (3.5.25 and 3.5.26
//     refused), and the oldest that kubeadm 1.34 accepts as an external etcd (its preflight
//     check ExternalEtcdVersion, found by make e2e-cluster with 3.5.21). Its etcdctl and
//     etcdutl are 3.5.21's sources, the newest of theirs the proxy serves (3.5.22 to 3.5.26
//     refused), built with the 3.5.24 libraries; kubespray uses them for health checks and
//     backups, which 3.5 keeps compatible within the minor release;
//   - flannel 0.27.4, not 0.27.3 (refused);
//   - nerdctl 1.7.7, not 2.2.1: every nerdctl 2 release requires its own test framework module
//     (mod/tigron) through a replace directive, and the proxy serves no version of it. nerdctl
//     1.7 speaks containerd's API 1.x, which containerd 2 serves, and reads the same
//     /etc/containerd/certs.d.
//
// The rest keep the cluster to what the machines and the site's mirror carry: flannel (its
// sources are here), no node-local DNS cache and no DNS autoscaler (images of no Go module
// here), and no nginx proxy on each worker for the API server (nginx is not a Go module): the
// workers reach the master's API server directly, kubespray's "no external or internal load
// balancer" mode. In that mode v2.30.0 leaves apiserver_loadbalancer_domain_name undefined
// and fails aggregating the API server certificate's names (found by make e2e-cluster): it is
// given localhost, a name the certificate carries anyway.
func KubesprayVars() map[string]bpav1.ExtraVarValue {
	return map[string]bpav1.ExtraVarValue{
		"kube_network_plugin":                bpav1.ExtraVar("flannel"),
		"enable_nodelocaldns":                bpav1.ExtraVar(false),
		"enable_dns_autoscaler":              bpav1.ExtraVar(false),
		"loadbalancer_apiserver_localhost":   bpav1.ExtraVar(false),
		"apiserver_loadbalancer_domain_name": bpav1.ExtraVar("localhost"),
		"etcd_version":                       bpav1.ExtraVar("3.5.24"),
		"flannel_version":                    bpav1.ExtraVar("0.27.4"),
		"nerdctl_version":                    bpav1.ExtraVar("1.7.7"),
	}
}

// Offline is the test cluster as an offline Provisioning of one master and one worker with
// these extraVars (SSH as "bpa", a user with sudo), and the nodes it is placed on: what
// render-inventory renders and kubespray lists its downloads for.
func Offline(vars map[string]bpav1.ExtraVarValue) (*bpav1.Provisioning, []bpav1.Node) {
	p := &bpav1.Provisioning{
		ObjectMeta: metav1.ObjectMeta{Name: "test-cluster", Namespace: "default", Labels: map[string]string{bpav1.ClusterLabel: "test-cluster"}},
		Spec: bpav1.ProvisioningSpec{
			Masters:   []bpav1.HostEntry{{"master": {MACAddress: "52:54:00:e2:e0:31"}}},
			Workers:   []bpav1.HostEntry{{"worker": {MACAddress: "52:54:00:e2:e0:32"}}},
			Offline:   ptr.To(true),
			SSH:       &bpav1.SSHAccess{User: "bpa"},
			Kubespray: &bpav1.KubesprayOptions{ExtraVars: vars},
		},
	}
	return p, []bpav1.Node{
		{Label: "master", Role: "master", BareMetalHost: "default/master", MAC: "52:54:00:e2:e0:31", IP: "10.250.0.31"},
		{Label: "worker", Role: "worker", BareMetalHost: "default/worker", MAC: "52:54:00:e2:e0:32", IP: "10.250.0.32"},
	}
}

// ChecksumsFile is the file of a downloads build (hack/kubespray-downloads.sh's output
// folder) that gives kubespray the checksums of what was built: one typed extra variable per
// file, kubespray's own name for it (kubeadm_binary_checksum...), "sha256:HEX".
const ChecksumsFile = "checksums.json"

var checksumVarRe = regexp.MustCompile(`^[a-z][a-z0-9_]*_checksum$`)
var checksumRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Checksums reads a downloads build's ChecksumsFile as extra variables.
func Checksums(dir string) (map[string]bpav1.ExtraVarValue, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ChecksumsFile)) //nolint:gosec // G304: the build folder the caller names
	if err != nil {
		return nil, err
	}
	var sums map[string]string
	if err := json.Unmarshal(raw, &sums); err != nil {
		return nil, fmt.Errorf("%s: %w", ChecksumsFile, err)
	}
	out := map[string]bpav1.ExtraVarValue{}
	for name, sum := range sums {
		if !checksumVarRe.MatchString(name) || !checksumRe.MatchString(sum) {
			return nil, fmt.Errorf("%s: %s: %q: want NAME_checksum: sha256:HEX", ChecksumsFile, name, sum)
		}
		out[name] = bpav1.ExtraVar(sum)
	}
	return out, nil
}

// Vars is KubesprayVars with a downloads build's checksums.
func Vars(downloadsDir string) (map[string]bpav1.ExtraVarValue, error) {
	sums, err := Checksums(downloadsDir)
	if err != nil {
		return nil, err
	}
	vars := KubesprayVars()
	maps.Copy(vars, sums)
	return vars, nil
}
