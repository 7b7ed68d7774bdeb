package installsoftware

import (
	"slices"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// PackagesDigest is the digest of what a node of this role gets: the packages of the masters,
// the workers, or both for a node with both roles, and their binaries as files: each binary's
// name and directory with the digest of the file (binaries, by "role:name": the file the site
// registry resolves the binary to now, or the one a node reported installing). A spec
// without binaries has the digest it had before binaries existed.
func PackagesDigest(spec *bpav1.SoftwareSpec, role bpav1.NodeRoles, binaries map[string]string) string {
	var pkgs []string
	for _, r := range role.List() {
		list, bins := spec.WorkerSoftware, spec.WorkerBinaries
		if r == bpav1.RoleMaster {
			list, bins = spec.MasterSoftware, spec.MasterBinaries
		}
		for _, p := range list {
			pkgs = append(pkgs, r+":"+p.Name+"="+p.Version)
		}
		for _, b := range bins {
			pkgs = append(pkgs, r+":binary:"+b.Name+"@"+b.InstallDirectory()+"="+binaries[r+":"+b.Name])
		}
	}
	return steps.Digest(pkgs)
}

// HasBinaries reports whether a Software installs binaries (and so depends on the site
// registry's content, not only on its spec).
func HasBinaries(spec *bpav1.SoftwareSpec) bool {
	return len(spec.MasterBinaries)+len(spec.WorkerBinaries) > 0
}

// SoftwareNodes says which nodes need a Software run: those whose last successful install
// (in the status reports) had another package list, or other binary files, than the spec and
// the site registry (binaries: each binary's current file digest) now give their role. all is
// true when that is every node, so the run needs no node limit.
func SoftwareNodes(sw *bpav1.Software, nodes []bpav1.Node, binaries map[string]string) (need []string, all bool) {
	done := map[string]string{}
	for _, r := range sw.Status.Nodes {
		done[r.Node] = r.Digest
	}
	for _, n := range nodes {
		if done[n.Label] != PackagesDigest(&sw.Spec, n.Role, binaries) {
			need = append(need, n.Label)
		}
	}
	slices.Sort(need)
	return need, len(need) == len(nodes) && len(nodes) > 0
}
