package pod

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Run renders kubespray's inventory and extra variables from the CR, read through
// the API at the Workflow's generation, and the addressed hosts.
func Run(ctx context.Context, c client.Reader, ref stepcmd.CRRef, placed []bpav1.Node, opts renderinventory.Options) (inventory, extraVars []byte, err error) {
	p := &bpav1.Provisioning{}
	if err := stepcmd.Get(ctx, c, ref, p, "Provisioning"); err != nil {
		return nil, nil, err
	}
	return renderinventory.Render(p, placed, opts)
}
