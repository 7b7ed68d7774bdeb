package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
)

// controlPlaneProcess is etcd or kube-apiserver as envtest started it: what a crash and a
// restart with the same arguments (same data directory, certificates and ports) needs.
type controlPlaneProcess struct {
	pid  int
	args []string
	dir  string
}

// children finds this process's children running one of the named binaries.
func children(names ...string) (map[string]controlPlaneProcess, error) {
	out := map[string]controlPlaneProcess{}
	parents, err := testutil.ParentPIDs()
	if err != nil {
		return nil, err
	}
	for pid, ppid := range parents {
		if ppid != os.Getpid() {
			continue
		}
		proc := filepath.Join("/proc", strconv.Itoa(pid))
		raw, err := os.ReadFile(filepath.Join(proc, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		dir, _ := os.Readlink(filepath.Join(proc, "cwd"))
		for _, name := range names {
			if filepath.Base(args[0]) == name {
				out[name] = controlPlaneProcess{pid: pid, args: args, dir: dir}
			}
		}
	}
	for _, name := range names {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("no %s process among this one's children", name)
		}
	}
	return out, nil
}

// crashControlPlane kills etcd and kube-apiserver (kill -9), starts them again with the same
// arguments, and waits until the API server answers; it returns how long the API was down
// and the restarted processes, which the caller stops.
func (h *harness) crashControlPlane(ctx context.Context) (time.Duration, []*exec.Cmd, error) {
	procs, err := children("etcd", "kube-apiserver")
	if err != nil {
		return 0, nil, err
	}
	start := time.Now()
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if err := syscall.Kill(procs[name].pid, syscall.SIGKILL); err != nil {
			return 0, nil, err
		}
	}
	// Killed processes are reaped by envtest's own Wait; their ports free up when they are gone.
	for _, name := range []string{"kube-apiserver", "etcd"} {
		for i := 0; i < 500 && syscall.Kill(procs[name].pid, 0) == nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	var cmds []*exec.Cmd
	for _, name := range []string{"etcd", "kube-apiserver"} {
		p := procs[name]
		cmd := exec.Command(p.args[0], p.args[1:]...)
		cmd.Dir = p.dir
		log, err := os.Create(filepath.Join(h.dir, name+"-restarted.log"))
		if err != nil {
			return 0, cmds, err
		}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			return 0, cmds, err
		}
		cmds = append(cmds, cmd)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var nss corev1.NamespaceList
		if err := h.c.List(ctx, &nss); err == nil {
			return time.Since(start), cmds, nil
		}
		if time.Now().After(deadline) {
			return 0, cmds, fmt.Errorf("the API server did not answer within 2 minutes of its restart; see %s", h.dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
