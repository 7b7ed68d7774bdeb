package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
)

// BinaryResolver says which file the site registry holds for a binary now: the version's, or
// the newest version's when none is given (siteregistry.Client).
type BinaryResolver interface {
	ResolveBinary(ctx context.Context, name, version string) (siteregistry.Artifact, error)
}

// DefaultRegistryPollInterval is how often a Software with binaries asks the site registry
// whether a new version was uploaded (or a version replaced).
const DefaultRegistryPollInterval = time.Minute

// binariesSalt names the registry's content a run installs: its resolved digests, in order.
func binariesSalt(binaries map[string]string) string {
	keys := slices.Sorted(maps.Keys(binaries))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+binaries[k])
	}
	return "binaries:" + strings.Join(parts, ",")
}

// resolveBinaries maps "role:name" of every binary of the spec to the digest of the file the
// site registry resolves it to: the pinned version's, or the newest version's.
func resolveBinaries(ctx context.Context, reg BinaryResolver, spec *bpav1.SoftwareSpec) (map[string]string, error) {
	out := map[string]string{}
	seen := map[bpav1.BinaryPackage]string{}
	// Roles in order, so the first failure named is always the same one.
	for _, role := range []string{bpav1.RoleMaster, bpav1.RoleWorker} {
		bins := spec.MasterBinaries
		if role == bpav1.RoleWorker {
			bins = spec.WorkerBinaries
		}
		for _, b := range bins {
			key := bpav1.BinaryPackage{Name: b.Name, Version: b.Version}
			d, ok := seen[key]
			if !ok {
				a, err := reg.ResolveBinary(ctx, b.Name, b.Version)
				if err != nil {
					return nil, fmt.Errorf("binary %s: %w", b.Name, err)
				}
				d = a.File.Digest.String()
				seen[key] = d
			}
			out[role+":"+b.Name] = d
		}
	}
	return out, nil
}
