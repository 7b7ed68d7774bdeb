package testinterrupt

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// TestRunPendingLastFirstOnce: an interrupt runs the cleanups last registered first, each
// once (the test's own cleanup does not run it again), and one that ends its goroutine
// (t.Fatal from a cleanup) does not stop the others.
func TestRunPendingLastFirstOnce(t *testing.T) {
	var ran []string
	t.Run("interrupted", func(t *testing.T) {
		Cleanup(t, func() { ran = append(ran, "first") })
		Cleanup(t, func() { ran = append(ran, "exits"); runtime.Goexit() })
		Cleanup(t, func() { ran = append(ran, "last") })
		if n := RunPending(); n != 3 {
			t.Errorf("RunPending ran %d, want 3", n)
		}
	})
	if want := []string{"last", "exits", "first"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
	if n := RunPending(); n != 0 {
		t.Errorf("after the test ended, %d cleanups still pending", n)
	}
}

// TestSignalRunsTheCleanups: a test process that gets SIGTERM runs its pending cleanups
// before it exits, and removes its ScratchDir and its TempDirs with the test's folder of them (this test binary,
// run again as the interrupted suite, with its own TMPDIR).
func TestSignalRunsTheCleanups(t *testing.T) {
	if out := os.Getenv("TESTINTERRUPT_OUT"); out != "" {
		Cleanup(t, func() { _ = os.WriteFile(out, []byte("cleaned up"), 0o644) })
		for range 2 {
			if err := os.WriteFile(filepath.Join(TempDir(t), "disk"), []byte("gigabytes"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(out+".scratch", []byte(ScratchDir(t, "bpa-testinterrupt-")), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out+".ready", nil, 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		t.Fatal("not interrupted")
	}
	out := filepath.Join(t.TempDir(), "out")
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalRunsTheCleanups$")
	cmd.Env = append(os.Environ(), "TESTINTERRUPT_OUT="+out, "TMPDIR="+tmp)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(out + ".ready"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the suite did not start")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if got, _ := os.ReadFile(out); string(got) != "cleaned up" {
		t.Errorf("after SIGTERM (%v), the cleanup did not run: %q\n%s", err, got, stderr.String())
	}
	if !strings.Contains(stderr.String(), "testinterrupt: terminated: running 4 cleanups") {
		t.Errorf("stderr: %s", stderr.String())
	}
	if scratch, _ := os.ReadFile(out + ".scratch"); len(scratch) == 0 {
		t.Errorf("the suite did not say where its scratch folder is")
	} else if _, err := os.Stat(string(scratch)); !os.IsNotExist(err) {
		t.Errorf("after SIGTERM, the suite's scratch folder %s is left (%v)", scratch, err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("after SIGTERM, the suite's temporary directories are left in %s: %v", tmp, left)
	}
}
