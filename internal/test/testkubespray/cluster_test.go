package testkubespray

import (
	"strings"
	"testing"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// The slow-node settings go into the real-cluster tests' Provisionings, which run for hours
// before anything reads them: the API's own validation must accept every one at once.
func TestSlowNodesPassTheProvisioningsValidation(t *testing.T) {
	p := &bpav1.Provisioning{Spec: bpav1.ProvisioningSpec{Kubespray: &bpav1.KubesprayOptions{ExtraVars: SlowNodes()}}}
	for _, err := range p.Validate() {
		if strings.Contains(err.Field, "extraVars") {
			t.Errorf("slow-node setting refused: %v", err)
		}
	}
	if len(SlowNodes()) == 0 {
		t.Fatal("no slow-node settings")
	}
}
