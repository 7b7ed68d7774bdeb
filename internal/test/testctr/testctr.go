// Package testctr runs a containerd of the test's own (no CRI, no Kubernetes) for tests that run
// an image the project builds as a container, the way a step runs it: Debian's containerd and
// runc, driven with ctr. Everything it starts (containerd, its shims, their containers, their
// mounts) goes when the test ends, and with the test process when it is killed.
package testctr

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Containerd is a running containerd.
type Containerd struct {
	// Socket is its gRPC socket, for ctr --address.
	Socket string
	// Namespace is the containerd namespace the test's images and containers live in: its own,
	// so that runc's state (under /run/containerd/runc/NAMESPACE, shared by every containerd
	// on the machine) never meets another test's or a killed run's.
	Namespace string
	runs      int
}

// Start runs containerd with its root, state and socket under dir (short paths: the socket's
// path is bounded), and waits until it answers.
func Start(t testing.TB, dir string) *Containerd {
	t.Helper()
	for _, tool := range []string{"containerd", "ctr", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: run `make test-deps` (Debian containerd, runc)", tool)
		}
	}
	socket := filepath.Join(dir, "containerd.sock")
	config := filepath.Join(dir, "containerd.toml")
	must(t, os.WriteFile(config, []byte(fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = %q
[ttrpc]
  address = "%s.ttrpc"
`, filepath.Join(dir, "containerd"), filepath.Join(dir, "containerd-state"), socket, socket)), 0o644))
	logFile, err := os.Create(filepath.Join(dir, "containerd.log"))
	must(t, err)
	// containerd's shims outlive containerd by design, and with them a running container: a
	// test killed mid-run (no cleanup runs) would leave its kubespray playing on. So containerd
	// is the first process of a PID namespace of its own, with its own /proc (unshare): unshare
	// dies with the test (Pdeathsig), containerd with unshare (--kill-child), and with
	// containerd every process of its namespace, shims and containers among them. Its mounts
	// live in the namespace's own mount namespace and go with it.
	cmd := exec.Command("unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "containerd", "--config", config)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	must(t, cmd.Start())
	t.Cleanup(func() {
		// unshare ignores SIGTERM; killing it takes the whole namespace down, as above. Every
		// run has ended by now (ctr run --rm), so nothing is cut short.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
	})
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	c := &Containerd{Socket: socket, Namespace: "bpa-test-" + hex.EncodeToString(suffix)}
	deadline := time.Now().Add(20 * time.Second)
	for c.ctr("version") != nil {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("containerd did not answer on %s:\n%s", socket, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return c
}

// command is ctr against this containerd, in its namespace.
func (c *Containerd) command(args ...string) *exec.Cmd {
	return exec.Command("ctr", append([]string{"--address", c.Socket, "--namespace", c.Namespace}, args...)...)
}

func (c *Containerd) ctr(args ...string) error {
	return c.command(args...).Run()
}

// Ctr runs ctr against this containerd, in its namespace, and returns its combined output.
func (c *Containerd) Ctr(args ...string) (string, error) {
	out, err := c.command(args...).CombinedOutput()
	return string(out), err
}

// Import imports an image archive and returns the full name of the image in it whose name
// contains want.
func (c *Containerd) Import(t testing.TB, archive, want string) string {
	t.Helper()
	if out, err := c.Ctr("images", "import", archive); err != nil {
		t.Fatalf("ctr images import %s: %v\n%s", archive, err, out)
	}
	list, err := c.Ctr("images", "list", "--quiet")
	must(t, err)
	for _, name := range strings.Fields(list) {
		if strings.Contains(name, want) {
			return name
		}
	}
	t.Fatalf("the archive %s holds no image named like %q", archive, want)
	return ""
}

// Run runs command in a new container of image, removed afterwards, with ctr run's options
// (--mount, --env, --cwd, --net-host...), and returns its combined output.
func (c *Containerd) Run(image string, options []string, command ...string) (string, error) {
	return c.RunTee(image, options, nil, command...)
}

// RunTee is Run that also copies the output to also (when not nil) as it comes, so that a run
// of the better part of an hour can be followed while it goes.
func (c *Containerd) RunTee(image string, options []string, also io.Writer, command ...string) (string, error) {
	c.runs++
	args := append([]string{"run", "--rm"}, options...)
	args = append(args, image, fmt.Sprintf("run-%d", c.runs))
	var out bytes.Buffer
	var w io.Writer = &out
	if also != nil {
		w = io.MultiWriter(&out, also)
	}
	cmd := c.command(append(args, command...)...)
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	return out.String(), err
}

// UnmountUnder unmounts every mount below dir, deepest first.
func UnmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	f.Close()
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
