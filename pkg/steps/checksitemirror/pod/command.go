// Package pod is what the check-site-mirror step's pod runs: its command (`bpa-workflow-controller
// step check-site-mirror`) and the runtime that does its I/O. The compiler never imports it; the
// step's template and decisions are the package checksitemirror, one folder up.
package pod

import (
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checksitemirror"
)

// Command is the step as its pod runs it.
func Command() *cobra.Command {
	var downloads, mirror string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   checksitemirror.Name + " --downloads FILE --mirror URL",
		Short: "Ask the site's mirror for every file and image kubespray fetches for this run; fail naming what is missing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return Run(cmd.Context(), &http.Client{Timeout: timeout}, downloads, mirror, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&downloads, "downloads", "", "the list, as list-kubespray-downloads wrote it (required)")
	cmd.Flags().StringVar(&mirror, "mirror", "", "the site's mirror as the nodes reach it, http(s)://HOST[:PORT] (required)")
	cmd.Flags().DurationVar(&timeout, "timeout", 20*time.Second, "how long one request to the mirror may take")
	for _, f := range []string{"downloads", "mirror"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}
