package steps_test

import (
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// TestDigestIsStable: the status keeps digests across releases (status.provisioned, each
// node's Software report); the same value must give the same digest, or an upgrade of the
// controller would rerun every node. The want is sha256 of the JSON, by sha256sum.
func TestDigestIsStable(t *testing.T) {
	if got, want := steps.Digest([]string{"master:curl="}), "4076b68c53e5b6fe"; got != want {
		t.Errorf("Digest = %s, want %s", got, want)
	}
}
