// Package cli is the bpa-workflow-controller command line: compile, plan and step, over the
// pure core. Every command either succeeds with its whole output or fails with one line on
// stderr and nothing on stdout.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// NewRootCommand builds the command tree.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "bpa-workflow-controller",
		Short:         "Turns bare-metal servers into Kubernetes clusters through Argo Workflows",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	run := newRunCommand()
	// The bare command runs the manager, with the same flags as `run`.
	root.RunE = run.RunE
	root.Args = cobra.NoArgs
	root.Flags().AddFlagSet(run.Flags())
	root.AddCommand(run, newCompileCommand(), newPlanCommand(), newStepCommand(), newUploadCommand(), newServeFilesCommand(), newRegistryGateCommand())
	return root
}

// Execute runs the command line until it ends, or until SIGINT or SIGTERM, and returns the
// process exit code.
func Execute(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return ExecuteContext(ctx, args, stdout, stderr)
}

// ExecuteContext runs the command line until it ends or ctx is done (the manager stops
// cleanly), and returns the process exit code.
func ExecuteContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		writeTerminationMessage(TerminationMessagePath, OneLine(err))
		if steps.IsRetryable(err) {
			fmt.Fprintf(stderr, "bpa-workflow-controller: %s (exit %d: retried by Argo)\n", OneLine(err), steps.ExitRetryable)
			return steps.ExitRetryable
		}
		fmt.Fprintf(stderr, "bpa-workflow-controller: %s\n", OneLine(err))
		return 1
	}
	return 0
}

// TerminationMessagePath is where a container's process leaves the message its pod's status
// shows when it ends (the kubelet's default terminationMessagePath): Argo puts it in the step's
// node message, which the controller mirrors into the CR's status.
var TerminationMessagePath = "/dev/termination-log"

// writeTerminationMessage writes the failure into the termination message file, when it exists:
// in a pod's container the kubelet makes it; elsewhere nothing is created.
func writeTerminationMessage(path, msg string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return
	}
	_, _ = f.WriteString(msg)
	_ = f.Close()
}

// OneLine folds a (joined) error onto one line.
func OneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}
