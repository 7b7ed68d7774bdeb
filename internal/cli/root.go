// Package cli is the bpa-workflow-controller command line: compile, plan and step, over the
// pure core. Every command either succeeds with its whole output or fails with one line on
// stderr and nothing on stdout.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// NewRootCommand builds the command tree.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "bpa-workflow-controller",
		Short:         "Turns bare-metal servers into Kubernetes clusters through Argo Workflows",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          runManager,
	}
	root.AddCommand(newRunCommand(), newCompileCommand(), newPlanCommand(), newStepCommand())
	return root
}

func newRunCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "Run the controller manager (the default)",
		Args:  cobra.NoArgs,
		RunE:  runManager,
	}
}

func runManager(*cobra.Command, []string) error {
	return errors.New("the controller manager is not built yet: it arrives with the controller; use compile and plan meanwhile")
}

// Execute runs the command line and returns the process exit code.
func Execute(args []string, stdout, stderr io.Writer) int {
	root := NewRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		fmt.Fprintf(stderr, "bpa-workflow-controller: %s\n", OneLine(err))
		return 1
	}
	return 0
}

// OneLine folds a (joined) error onto one line.
func OneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}

// writeFileAtomic writes data to path through a temporary file in the same directory, so a
// reader sees the old file or the whole new one, never half of it.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
