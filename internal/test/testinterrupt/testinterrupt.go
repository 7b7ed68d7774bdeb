// Package testinterrupt runs a suite's cleanups when its test process is interrupted (SIGINT,
// SIGTERM). go test runs no t.Cleanup then, and what the end-to-end and machine suites start
// outside their own process tree outlives them: envtest's kube-apiserver and etcd, containerd
// and its shims, the kubelet's mounts, sysctls changed for the node. (QEMU and the namespaces'
// holders die with the test process by themselves: Pdeathsig.)
package testinterrupt

import (
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

var (
	mu       sync.Mutex
	pending  = map[int]*cleanup{}
	nextID   int
	signaled = make(chan os.Signal, 1)
	// interrupted is set once a signal has come: the test's folder of temporary directories
	// is then left to TempDir's cleanups, since go test removes it only when the test ends.
	interrupted atomic.Bool
)

type cleanup struct {
	once sync.Once
	f    func()
}

// Cleanup registers f as t.Cleanup does, and to run, last registered first, if the process is
// interrupted before t ends.
func Cleanup(t testing.TB, f func()) {
	t.Helper()
	c := &cleanup{f: f}
	mu.Lock()
	id := nextID
	nextID++
	pending[id] = c
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		delete(pending, id)
		mu.Unlock()
		c.once.Do(c.f)
	})
}

// TempDir returns t.TempDir(), removed if the process is interrupted too, with the test's
// folder of temporary directories once it is empty: go test removes them only when the test
// ends, and an interrupted run of the machine suites would leave the machines' disks behind,
// gigabytes each time.
func TempDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	Cleanup(t, func() {
		_ = os.RemoveAll(dir)
		if interrupted.Load() {
			_ = os.Remove(filepath.Dir(dir)) // only if empty: other TempDirs' cleanups may follow
		}
	})
	return dir
}

// ScratchDir is a folder under /var/tmp, whose paths are short enough for the sockets
// containerd puts in it (/tmp's test folders are not), removed when t ends or the process is
// interrupted.
func ScratchDir(t testing.TB, prefix string) string {
	t.Helper()
	return scratchDir(t, prefix, false)
}

// ScratchDirKeptOnFailure is ScratchDir kept when t has failed, to be read; it says where.
func ScratchDirKeptOnFailure(t testing.TB, prefix string) string {
	t.Helper()
	return scratchDir(t, prefix, true)
}

func scratchDir(t testing.TB, prefix string, keepOnFailure bool) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", prefix)
	if err != nil {
		t.Fatal(err)
	}
	Cleanup(t, func() {
		if keepOnFailure && t.Failed() {
			t.Logf("the scratch folder is kept, to be read: %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// Main runs the suite's tests; on SIGINT or SIGTERM it runs the pending cleanups and exits 1.
func Main(m *testing.M) {
	signal.Notify(signaled, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-signaled
		interrupted.Store(true)
		fmt.Fprintf(os.Stderr, "testinterrupt: %s: running %d cleanups before exiting\n", sig, RunPending())
		os.Exit(1)
	}()
	os.Exit(m.Run())
}

// RunPending runs the pending cleanups, last registered first, each in its own goroutine (a
// cleanup that calls t.Fatal ends only its own), and says how many ran.
func RunPending() int {
	mu.Lock()
	ids := slices.Sorted(maps.Keys(pending))
	cs := make([]*cleanup, 0, len(ids))
	for _, id := range slices.Backward(ids) {
		cs = append(cs, pending[id])
		delete(pending, id)
	}
	mu.Unlock()
	for _, c := range cs {
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.once.Do(c.f)
		}()
		<-done
	}
	return len(cs)
}
