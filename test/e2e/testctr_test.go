//go:build e2e

package e2e_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testctr"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
)

// TestContainersDieWithAKilledTest runs a container with testctr in a child test process, kills
// that process with SIGKILL (no cleanup can run), and checks that containerd, its shim and the
// container went with it: a suite killed during the real kubespray's run leaves nothing
// playing on.
func TestContainersDieWithAKilledTest(t *testing.T) {
	const marker = "4242.5" // the container's sleep: no other process sleeps that long
	if dir := os.Getenv("BPA_CTR_CHILD"); dir != "" {
		c := testctr.Start(t, dir)
		image := c.Import(t, filepath.Join(testenv.RepoRoot(), "bin", "node-images.tar"), "kubespray-standin")
		go func() { _, _ = c.Run(image, nil, "sleep", marker) }()
		for {
			if out, _ := c.Ctr("tasks", "list"); strings.Contains(out, "RUNNING") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		fmt.Println("container running")
		select {} // until killed
	}
	if os.Geteuid() != 0 {
		t.Fatal("containers need root")
	}
	if _, err := os.Stat(filepath.Join(testenv.RepoRoot(), "bin", "node-images.tar")); err != nil {
		t.Fatalf("the node's images are not built: run `make e2e` (hack/node-images.sh)")
	}
	dir := testinterrupt.ScratchDir(t, "bpa-ctr-")
	child := exec.Command(os.Args[0], "-test.run=^TestContainersDieWithAKilledTest$", "-test.v")
	child.Env = append(os.Environ(), "BPA_CTR_CHILD="+dir)
	child.SysProcAttr = dieWithTest()
	out, err := child.StdoutPipe()
	must(t, err)
	must(t, child.Start())
	running := make(chan bool, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if lines.Text() == "container running" {
				running <- true
				return
			}
		}
		running <- false
	}()
	select {
	case ok := <-running:
		if !ok {
			_ = child.Process.Kill()
			t.Fatal("the child test ended before its container ran")
		}
	case <-time.After(2 * time.Minute):
		_ = child.Process.Kill()
		t.Fatal("the child test's container did not run within 2 minutes")
	}
	must(t, child.Process.Kill())
	_ = child.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := processesNaming(dir, "sleep "+marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the test was killed, these are still running:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// processesNaming is every process whose command line holds one of words.
func processesNaming(words ...string) []string {
	pids, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var found []string
	for _, p := range pids {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		line := string(bytes.ReplaceAll(bytes.TrimRight(raw, "\x00"), []byte{0}, []byte{' '}))
		for _, w := range words {
			if strings.Contains(line, w) {
				found = append(found, filepath.Base(filepath.Dir(p))+" "+line)
				break
			}
		}
	}
	return found
}
