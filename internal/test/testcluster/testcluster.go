// Package testcluster is the test cluster's kubespray configuration: the options that decide
// what kubespray downloads for it, shared by the tool that builds those downloads
// (hack/kubespray-downloads) and the suites that give them to the real kubespray, so that what
// is built is exactly what the runs fetch.
package testcluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubesprayreleases"
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
// crictl is 1.34.0 whatever the cluster's Kubernetes version: kubespray picks the crictl of
// the cluster's minor release (1.33.0 for 1.33), and the third-party folder holds cri-tools
// 1.34.0 and 1.35.0 only. crictl speaks the CRI (v1) to containerd, not to the kubelet; one
// crictl serves both versions of the upgrade test, as one does a cluster mid-upgrade.
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
		"crictl_version":                     bpav1.ExtraVar("1.34.0"),
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
// folder) that gives kubespray the checksums of what was built, as typed extra variables in
// kubespray's own names: a file's checksum variable (etcd_binary_checksum: "sha256:HEX"), or,
// for the files whose version is the cluster's Kubernetes version, the table it is looked up
// in (kubeadm_checksums: amd64: "1.34.3": "sha256:HEX"), so that two builds give both versions.
const ChecksumsFile = "checksums.json"

// ChecksumTable is one of kubespray's checksum tables: architecture → version → "sha256:HEX".
type ChecksumTable map[string]map[string]string

var (
	checksumVarRe   = regexp.MustCompile(`^[a-z][a-z0-9_]*_checksum$`)
	checksumTableRe = regexp.MustCompile(`^[a-z][a-z0-9_]*_checksums$`)
	checksumRe      = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	archRe          = regexp.MustCompile(`^[a-z0-9]+$`)
)

// Checksums reads a downloads build's ChecksumsFile: its checksum variables and its tables.
func Checksums(dir string) (sums map[string]string, tables map[string]ChecksumTable, err error) {
	raw, err := os.ReadFile(filepath.Join(dir, ChecksumsFile))
	if err != nil {
		return nil, nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", ChecksumsFile, err)
	}
	sums, tables = map[string]string{}, map[string]ChecksumTable{}
	for name, v := range all {
		switch {
		case checksumVarRe.MatchString(name):
			var sum string
			if json.Unmarshal(v, &sum) != nil || !checksumRe.MatchString(sum) {
				return nil, nil, fmt.Errorf("%s: %s: %s: want sha256:HEX", ChecksumsFile, name, v)
			}
			sums[name] = sum
		case checksumTableRe.MatchString(name):
			var table ChecksumTable
			if err := json.Unmarshal(v, &table); err != nil {
				return nil, nil, fmt.Errorf("%s: %s: want ARCH: VERSION: sha256:HEX: %w", ChecksumsFile, name, err)
			}
			for arch, byVersion := range table {
				for version, sum := range byVersion {
					if _, err := kubesprayreleases.ParseVersion(version); err != nil || !archRe.MatchString(arch) || !checksumRe.MatchString(sum) {
						return nil, nil, fmt.Errorf("%s: %s: %s: %s: %q: want ARCH: VERSION: sha256:HEX", ChecksumsFile, name, arch, version, sum)
					}
				}
			}
			tables[name] = table
		default:
			return nil, nil, fmt.Errorf("%s: %s: want NAME_checksum or NAME_checksums", ChecksumsFile, name)
		}
	}
	return sums, tables, nil
}

// Vars is KubesprayVars with the checksums of one or more downloads builds: their variables,
// which must agree (one etcd, one containerd...), and their tables merged (one build per
// Kubernetes version). kube_version_min_required is then the oldest version of kubelet's
// table: kubespray takes it from that table's last entry, and a table given as extra variables
// reaches it in name order, newest last, which would refuse every version but the newest.
func Vars(downloadsDirs ...string) (map[string]bpav1.ExtraVarValue, error) {
	if len(downloadsDirs) == 0 {
		return nil, fmt.Errorf("no downloads build")
	}
	sums, tables := map[string]string{}, map[string]ChecksumTable{}
	for _, dir := range downloadsDirs {
		s, t, err := Checksums(dir)
		if err != nil {
			return nil, err
		}
		for name, sum := range s {
			if prev, ok := sums[name]; ok && prev != sum {
				return nil, fmt.Errorf("the downloads builds disagree on %s (%s, %s): one file, two builds", name, prev, sum)
			}
			sums[name] = sum
		}
		for name, table := range t {
			if tables[name] == nil {
				tables[name] = ChecksumTable{}
			}
			for arch, byVersion := range table {
				if tables[name][arch] == nil {
					tables[name][arch] = map[string]string{}
				}
				for version, sum := range byVersion {
					if prev, ok := tables[name][arch][version]; ok && prev != sum {
						return nil, fmt.Errorf("the downloads builds disagree on %s[%s][%s] (%s, %s)", name, arch, version, prev, sum)
					}
					tables[name][arch][version] = sum
				}
			}
		}
	}
	vars := KubesprayVars()
	for name, sum := range sums {
		vars[name] = bpav1.ExtraVar(sum)
	}
	for name, table := range tables {
		vars[name] = bpav1.ExtraVar(table)
	}
	if oldest := oldestVersion(tables["kubelet_checksums"]["amd64"]); oldest != "" {
		vars["kube_version_min_required"] = bpav1.ExtraVar(oldest)
	}
	return vars, nil
}

// oldestVersion is the oldest of a table's versions ("" for none).
func oldestVersion(byVersion map[string]string) string {
	var oldest string
	var least kubesprayreleases.Version
	for v := range byVersion {
		parsed, err := kubesprayreleases.ParseVersion(v)
		if err != nil {
			continue
		}
		if oldest == "" || parsed.Compare(least) < 0 {
			oldest, least = v, parsed
		}
	}
	return oldest
}
