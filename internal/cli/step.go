package cli

import (
	"github.com/spf13/cobra"

	checketcdmemberspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checketcdmembers/pod"
	checkleavingnodespod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checkleavingnodes/pod"
	checknodespod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checknodes/pod"
	checksitemirrorpod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checksitemirror/pod"
	discoverhostspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts/pod"
	fetchkubeconfigpod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/fetchkubeconfig/pod"
	installsoftwarepod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware/pod"
	pinhostkeyspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys/pod"
	readcertificatespod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/readcertificates/pod"
	renderinventorypod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory/pod"
	reportnodespod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes/pod"
	resolveclusterhostspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveclusterhosts/pod"
	resolveleasespod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveleases/pod"
)

// newStepCommand gathers the steps' own commands: each step's folder holds what its pod runs.
func newStepCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "step NAME",
		Short: "Run one step of a compiled Workflow (what a workflow pod runs)",
	}
	cmd.AddCommand(discoverhostspod.Command(), resolveleasespod.Command(), renderinventorypod.Command(), pinhostkeyspod.Command(), checkleavingnodespod.Command(), checksitemirrorpod.Command(),
		fetchkubeconfigpod.Command(), checketcdmemberspod.Command(), checknodespod.Command(), readcertificatespod.Command(), reportnodespod.Command(), resolveclusterhostspod.Command(), installsoftwarepod.Command())
	return cmd
}
