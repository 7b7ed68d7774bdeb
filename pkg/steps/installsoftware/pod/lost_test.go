package pod_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// TestANodeGoingDownIsWaitedFor: a node that goes down while install-software runs (rebooted,
// powered off) makes the step wait (retryable), naming the node: it may come back, and the
// next try converges. test/vm reboots a real machine under the step; here sshd goes down while
// apt-get runs.
func TestANodeGoingDownIsWaitedFor(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "dpkg-query"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "apt-get"), []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sshd := testsshd.StartWithEnv(t, map[string]string{"PATH": bin + ":/usr/bin:/bin"})
	ns := env.PinnedNamespace(t, sshd)
	ref := software(t, ns, []bpav1.SoftwarePackage{{Name: "jq"}})
	opts := pod.InstallOptions{SSH: stepcmd.SSHOptions{KeyFile: sshd.ClientKeyFile, Port: sshd.Port, Timeout: 5 * time.Second}}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		time.Sleep(2 * time.Second) // apt-get runs
		sshd.Stop()
	}()
	_, err := pod.Run(ctx(), env.Client, ref, "master", bpav1.RoleMaster, "127.0.0.1", opts)
	<-stopped
	if err == nil || !steps.IsRetryable(err) || !strings.Contains(err.Error(), `node "master"`) {
		t.Fatalf("install-software on a node that went down: %v; want a retryable failure naming the node", err)
	}
}
