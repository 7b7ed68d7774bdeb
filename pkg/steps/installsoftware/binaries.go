package installsoftware

import (
	"fmt"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

// BinariesFor is the binary list of a role, as PackagesFor is the package list: a node with
// both roles gets both lists; the same binary asked for twice must be asked for the same way
// (a version and a directory given for one role win over none given for the other). Every name,
// version and directory is checked again: they reach a path and a shell on the node.
func BinariesFor(spec *bpav1.SoftwareSpec, role bpav1.NodeRoles) ([]bpav1.BinaryPackage, error) {
	var out []bpav1.BinaryPackage
	index := map[string]int{}
	for _, r := range role.List() {
		var list []bpav1.BinaryPackage
		switch r {
		case bpav1.RoleMaster:
			list = spec.MasterBinaries
		case bpav1.RoleWorker:
			list = spec.WorkerBinaries
		default:
			return nil, fmt.Errorf("role %q: want master, worker or master,worker", role)
		}
		for _, b := range list {
			if err := checkBinary(b); err != nil {
				return nil, err
			}
			i, seen := index[b.Name]
			if !seen {
				index[b.Name] = len(out)
				out = append(out, b)
				continue
			}
			merged, err := mergeBinary(out[i], b)
			if err != nil {
				return nil, fmt.Errorf("%w; a node of role %s cannot have both", err, role)
			}
			out[i] = merged
		}
	}
	return out, nil
}

func checkBinary(b bpav1.BinaryPackage) error {
	if err := artifacts.ValidateName(b.Name); err != nil {
		return fmt.Errorf("binary %w", err)
	}
	if b.Version != "" {
		if err := artifacts.ValidateVersion(b.Version); err != nil {
			return fmt.Errorf("binary %s: %w", b.Name, err)
		}
	}
	if err := artifacts.ValidateDirectory(b.InstallDirectory()); err != nil {
		return fmt.Errorf("binary %s: %w", b.Name, err)
	}
	return nil
}

func mergeBinary(a, b bpav1.BinaryPackage) (bpav1.BinaryPackage, error) {
	switch {
	case a.Version == "":
		a.Version = b.Version
	case b.Version != "" && b.Version != a.Version:
		return a, fmt.Errorf("binary %s is asked at %s for masters and %s for workers", a.Name, a.Version, b.Version)
	}
	switch {
	case a.Directory == "":
		a.Directory = b.Directory
	case b.Directory != "" && b.Directory != a.Directory:
		return a, fmt.Errorf("binary %s is asked in %s for masters and %s for workers", a.Name, a.Directory, b.Directory)
	}
	return a, nil
}
