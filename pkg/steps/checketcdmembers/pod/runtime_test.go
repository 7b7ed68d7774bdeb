package pod_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checketcdmembers/pod"
	pinhostkeyspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// realEtcd is a one-member etcd on loopback (the control plane's own build) and an etcdctl.sh
// like kubespray's: the real etcdctl with the member's endpoint.
type realEtcd struct {
	etcdctl, wrapper, endpoint string
	cmd                        *exec.Cmd
}

func startEtcd(t *testing.T) *realEtcd {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	e := &realEtcd{etcdctl: filepath.Join(assets, "etcdctl")}
	if _, err := os.Stat(e.etcdctl); err != nil {
		t.Fatalf("etcdctl is not in KUBEBUILDER_ASSETS (%s): run make test-deps, which builds it beside etcd", assets)
	}
	dir := t.TempDir()
	client, peer := "http://"+testutil.FreePort(t), "http://"+testutil.FreePort(t)
	e.endpoint = client
	var log bytes.Buffer
	e.cmd = exec.Command(filepath.Join(assets, "etcd"), "--name=etcd1", "--data-dir="+filepath.Join(dir, "data"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer, "--initial-cluster=etcd1="+peer)
	e.cmd.Stdout, e.cmd.Stderr = &log, &log
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.stop() })
	e.wrapper = filepath.Join(dir, "etcdctl.sh")
	script := fmt.Sprintf("#!/bin/sh\nexec %s --endpoints=%s --command-timeout=3s \"$@\"\n", e.etcdctl, client)
	if err := os.WriteFile(e.wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.Within(t, "etcd answering", func() error {
		_, err := e.ctl("endpoint", "health")
		return err
	})
	return e
}

func (e *realEtcd) ctl(args ...string) (string, error) {
	out, err := exec.Command(e.wrapper, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("etcdctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (e *realEtcd) stop() {
	if e.cmd.Process != nil && e.cmd.ProcessState == nil {
		_ = e.cmd.Process.Kill()
		_ = e.cmd.Wait()
	}
}

// TestCheckEtcdMembersOverSSH: the step logs in over real SSH (the host key pinned first),
// runs the etcdctl wrapper there against a real etcd, and passes only when the members are the
// planned ones; a member added but not started, or one planned but absent, fails naming it; an
// etcd that does not answer is worth a retry.
func TestCheckEtcdMembersOverSSH(t *testing.T) {
	sshd := testsshd.Start(t)
	etcd := startEtcd(t)
	ns := env.Namespace(t)
	_, ref := env.Provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	// The member's peer URL is on 127.0.0.1: node "master" is there; "master-2" is another
	// loopback address, which etcd accepts as a peer URL without anything listening.
	placed := []bpav1.Node{
		{Label: "master", Role: "master", BareMetalHost: "m/node-1", MAC: "00:c5:16:05:61:b2", IP: "127.0.0.1"},
		{Label: "master-2", Role: "master", BareMetalHost: "m/node-2", MAC: "00:c5:16:05:61:b3", IP: "127.0.0.2"},
	}
	if err := pinhostkeyspod.Run(ctx(), env.Client, ref, placed[:1], nil, sshd.Port, 10*time.Second, ""); err != nil {
		t.Fatal(err)
	}
	opts := stepcmd.SSHOptions{KeyFile: sshd.ClientKeyFile, Port: sshd.Port, Timeout: 10 * time.Second}
	check := func(members ...string) (string, error) {
		var out bytes.Buffer
		err := pod.Run(ctx(), env.Client, ref, placed, pod.Check{Members: members, User: testsshd.User(t), Etcdctl: etcd.wrapper}, opts, &out)
		return out.String(), err
	}

	if out, err := check("master"); err != nil || out != "etcd has the 1 members planned: master\n" {
		t.Fatalf("one member as planned: %q, %v", out, err)
	}
	if _, err := check("master", "master-2"); err == nil || !strings.Contains(err.Error(), "node master-2 is not a member; etcd has etcd1 (http://127.0.0.1:") || steps.IsRetryable(err) {
		t.Fatalf("a planned member absent: %v; want a final error naming it and what etcd has", err)
	}

	// A learner (a voting member never started would take etcd's quorum, and every answer, away).
	if _, err := etcd.ctl("member", "add", "etcd2", "--learner", "--peer-urls=http://127.0.0.2:2380"); err != nil {
		t.Fatal(err)
	}
	if _, err := check("master"); err == nil || !strings.Contains(err.Error(), "a member not started yet (http://127.0.0.2:2380), a learner is not a node the cluster's record names") || steps.IsRetryable(err) {
		t.Fatalf("a member the plan does not name: %v", err)
	}
	if _, err := check("master", "master-2"); err == nil || !strings.Contains(err.Error(), "node master-2 is a member not started yet (http://127.0.0.2:2380), a learner, not a started voting member") {
		t.Fatalf("a planned member not started: %v", err)
	}

	etcd.stop()
	if _, err := check("master"); err == nil || !steps.IsRetryable(err) || !strings.Contains(err.Error(), `asking etcd for its members on "master" (127.0.0.1)`) {
		t.Fatalf("etcd down: %v; want a retryable error naming the node", err)
	}
}
