package pod

import (
	"context"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checknodes"
	reportnodespod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes/pod"
)

// Timing bounds the check: the whole wait, and the pause between two reads of the nodes.
type Timing struct{ Wait, Poll time.Duration }

// Run reads the nodes until each of want is Ready, schedulable and at version, or the wait
// ends; then the error names each node still wrong and what is wrong with it (or, when the
// cluster never answered, why). It says on out what it saw each time that changed, so the
// step's log shows a node's way to Ready.
func Run(ctx context.Context, kubeconfig string, want []string, version string, timing Timing, out io.Writer) error {
	c, host, err := reportnodespod.Connect(kubeconfig, 30*time.Second)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timing.Wait)
	defer cancel()
	var last error
	for {
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		switch {
		case err != nil && last == nil:
			last = fmt.Errorf("listing the nodes at %s: %w", host, err)
		case err == nil:
			problems := checknodes.Problems(nodes.Items, want, version)
			if len(problems) == 0 {
				_, _ = fmt.Fprintf(out, "check-nodes: %s: Ready, schedulable%s\n", checknodes.Names(want), atVersion(version))
				return nil
			}
			now := checknodes.Failure(problems, len(want))
			if last == nil || now.Error() != last.Error() {
				_, _ = fmt.Fprintln(out, "check-nodes: "+now.Error())
			}
			last = now
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %s: %w", timing.Wait, last)
		case <-time.After(timing.Poll):
		}
	}
}

func atVersion(version string) string {
	if version == "" {
		return ""
	}
	return ", at " + version
}
