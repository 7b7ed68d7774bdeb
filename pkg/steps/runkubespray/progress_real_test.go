package runkubespray_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/golden"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// TestProgressOfRealKubespray reads the output of the real kubespray v2.30.0, run with the
// step's own files on the virtual machines' suite (kept as it came, BPA_KUBESPRAY_LOG), as the
// controller reads a step's log: every progress line parses, and the reports in order are
// the golden file's, one summary a line. The last of them is what LastProgress finds in the
// whole output.
func TestProgressOfRealKubespray(t *testing.T) {
	logs, err := filepath.Glob(filepath.Join("testdata", "progress", "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no recorded output under testdata/progress: %v", err)
	}
	for _, file := range logs {
		name := strings.TrimSuffix(filepath.Base(file), ".log")
		t.Run(name, func(t *testing.T) {
			out, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var reports []runkubespray.Progress
			var summaries strings.Builder
			for _, line := range strings.Split(string(out), "\n") {
				p, ok, err := runkubespray.ParseProgress(line)
				if err != nil {
					t.Fatalf("%v: %q", err, line)
				}
				if ok {
					reports = append(reports, p)
					summaries.WriteString(p.Summary() + "\n")
				}
			}
			golden.Check(t, filepath.Join("progress", name+".golden"), []byte(summaries.String()))
			last, ok := runkubespray.LastProgress(out)
			if !ok || len(reports) == 0 {
				t.Fatalf("LastProgress found nothing (ok %v) among %d reports", ok, len(reports))
			}
			if diff := cmp.Diff(reports[len(reports)-1], last); diff != "" {
				t.Errorf("LastProgress of the whole output (-the last line's +got):\n%s", diff)
			}
		})
	}
}
