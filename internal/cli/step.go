package cli

import (
	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checketcdmembers"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checkleavingnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checksitemirror"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/fetchkubeconfig"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/readcertificates"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveclusterhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveleases"
)

// newStepCommand gathers the steps' own commands: each step's folder holds what its pod runs.
func newStepCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "step NAME",
		Short: "Run one step of a compiled Workflow (what a workflow pod runs)",
	}
	cmd.AddCommand(discoverhosts.Command(), resolveleases.Command(), renderinventory.Command(), pinhostkeys.Command(), checkleavingnodes.Command(), checksitemirror.Command(),
		fetchkubeconfig.Command(), checketcdmembers.Command(), readcertificates.Command(), reportnodes.Command(), resolveclusterhosts.Command(), installsoftware.Command())
	return cmd
}
