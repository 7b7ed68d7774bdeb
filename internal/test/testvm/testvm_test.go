package testvm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
)

// TestRunWithin: what a test reads of a machine after a failure comes back with its stderr,
// and a machine that does not answer costs the test its limit, not its whole timeout.
func TestRunWithin(t *testing.T) {
	c := testsshd.Start(t).Dial(t)

	out, err := testvm.RunWithin(c, "echo out; echo err >&2; exit 3", time.Minute)
	if !strings.Contains(out, "out") || !strings.Contains(out, "err") {
		t.Errorf("RunWithin returned %q, want stdout and stderr", out)
	}
	if err == nil || !strings.Contains(err.Error(), "exited with status 3") {
		t.Errorf("RunWithin of a command exiting 3 returned error %v", err)
	}

	start := time.Now()
	out, err = testvm.RunWithin(c, "echo before; sleep 60", 2*time.Second)
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("RunWithin with a 2 s limit returned after %s", took)
	}
	if err == nil || !strings.Contains(err.Error(), "no answer within 2s") {
		t.Errorf("RunWithin past its limit returned error %v, want one naming the limit", err)
	}
	if !strings.Contains(out, "before") {
		t.Errorf("RunWithin past its limit returned %q, want what came before", out)
	}
}
