package pod_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys/pod"
)

// TestHostKeysPinnedBeforeKubespray: pin-host-keys records the node's key before kubespray
// runs; the real ansible-playbook, with the environment and ssh options the compiled
// run-kubespray step gives it and the known_hosts file from the cluster's Secret, logs in; a key
// swapped between pinning and kubespray is refused by ansible-playbook itself, and pinning again
// fails naming the node and both fingerprints.
func TestHostKeysPinnedBeforeKubespray(t *testing.T) {
	playbook, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Fatalf("ansible-playbook is missing: run `make test-deps` (Debian ansible-core)")
	}
	sshd := testsshd.Start(t)
	ns := env.Namespace(t)
	p, ref := env.Provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	hosts := []bpav1.Node{{Label: "master", Role: "master", BareMetalHost: ns + "/node-1", MAC: "00:c5:16:05:61:b2", IP: "127.0.0.1"}}

	if err := pod.Run(ctx(), env.Client, ref, hosts, nil, sshd.Port, 10*time.Second, ""); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{}
	if err := env.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cluster-abc-known-hosts"}, sec); err != nil {
		t.Fatal(err)
	}
	wantLine := fmt.Sprintf("[127.0.0.1]:%d %s", sshd.Port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshd.HostKey))))
	if got := strings.TrimSpace(string(sec.Data[steps.KnownHostsKey])); got != wantLine {
		t.Fatalf("known_hosts = %q, want %q", got, wantLine)
	}

	// run-kubespray as compiled: its environment, with the Secret's known_hosts where the pod
	// mounts it.
	dir := t.TempDir()
	knownHosts := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(knownHosts, sec.Data[steps.KnownHostsKey], 0o444); err != nil {
		t.Fatal(err)
	}
	// Each run in a fresh scratch directory, as each pod has its own /tmp.
	environ := func() []string { return testenv.KubesprayEnv(t, p, knownHosts, t.TempDir()) }
	inventory := filepath.Join(dir, "hosts.ini")
	book := filepath.Join(dir, "check.yml")
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(inventory, fmt.Sprintf("master ansible_host=127.0.0.1 ansible_port=%d ansible_user=root\n", sshd.Port))
	write(book, "- hosts: all\n  gather_facts: false\n  tasks:\n    - raw: \"true\"\n")
	kubespray := func() (string, error) {
		cmd := exec.Command(playbook, "--inventory="+inventory, "--private-key="+sshd.ClientKeyFile, book)
		cmd.Env, cmd.Dir = environ(), dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := kubespray(); err != nil {
		t.Fatalf("ansible-playbook with the pinned key: %v\n%s", err, out)
	}

	pinned := sshd.HostKey
	sshd.RestartWithNewHostKey(t)
	out, err := kubespray()
	refused := strings.Contains(out, "REMOTE HOST IDENTIFICATION HAS CHANGED") || strings.Contains(out, "Host key verification failed")
	if err == nil || !refused {
		t.Fatalf("ansible-playbook against a swapped host key: %v; want it refused\n%s", err, out)
	}

	err = pod.Run(ctx(), env.Client, ref, hosts, nil, sshd.Port, 10*time.Second, "")
	if err == nil || steps.IsRetryable(err) || !strings.Contains(err.Error(), `node "master"`) ||
		!strings.Contains(err.Error(), ssh.FingerprintSHA256(pinned)) || !strings.Contains(err.Error(), ssh.FingerprintSHA256(sshd.HostKey)) {
		t.Errorf("pinning a swapped key: %v; want a final error naming the node and both fingerprints", err)
	}

	t.Run("every failing node named; a changed key final beside a node still waited for", func(t *testing.T) {
		nodes := append(slices.Clone(hosts),
			bpav1.Node{Label: "worker-1", Role: "worker", BareMetalHost: ns + "/node-3", IP: "127.0.0.2"},
			bpav1.Node{Label: "worker-2", Role: "worker", BareMetalHost: ns + "/node-4", IP: "127.0.0.3"})
		err := pod.Run(ctx(), env.Client, ref, nodes, nil, sshd.Port, time.Second, "")
		if err == nil || steps.IsRetryable(err) || !strings.Contains(err.Error(), `node "master"`) ||
			!strings.Contains(err.Error(), `node "worker-1"`) || !strings.Contains(err.Error(), `node "worker-2"`) {
			t.Errorf("a changed key and two nodes not answering: %v; want a final error naming all three", err)
		}
	})

	t.Run("a node that does not answer: waited for, unless pinned and the run can do without it", func(t *testing.T) {
		down := []bpav1.Node{
			{Label: "worker-1", Role: "worker", BareMetalHost: ns + "/node-3", IP: "127.0.0.1"},
			{Label: "worker-2", Role: "worker", BareMetalHost: ns + "/node-4", IP: "127.0.0.2"},
		}
		if err := pod.Run(ctx(), env.Client, ref, down, nil, 1, time.Second, ""); err == nil || !steps.IsRetryable(err) ||
			!strings.Contains(err.Error(), "worker-1") || !strings.Contains(err.Error(), "worker-2") {
			t.Errorf("two unpinned nodes that do not answer: %v; want retryable, naming both", err)
		}
		sshd.Stop() // the pinned master is down
		addr := fmt.Sprintf("127.0.0.1:%d", sshd.Port)
		err := pod.Run(ctx(), env.Client, ref, hosts, nil, sshd.Port, time.Second, "")
		if err == nil || !steps.IsRetryable(err) || !strings.Contains(err.Error(), `node "master" (`+addr+`, BareMetalHost `+ns+`/node-1) does not answer SSH, tried at `) ||
			!strings.Contains(err.Error(), "the run waits for it before touching any host: power it on, or take it out of the spec") {
			t.Errorf("a pinned node the run needs, down: %v; want retryable, naming it, its address and what to do", err)
		}
		if got := notAnsweringEvents(t, ns); len(got) != 1 || got[0].Type != corev1.EventTypeWarning || !strings.Contains(err.Error(), got[0].Message) {
			t.Errorf("NodeNotAnswering Events %+v; want one Warning with the step's message", got)
		}
		output := filepath.Join(t.TempDir(), "outputs", pinhostkeys.SilentFile)
		before := time.Now().UTC().Truncate(time.Second)
		if err := pod.Run(ctx(), env.Client, ref, hosts, []string{"master"}, sshd.Port, time.Second, output); err != nil {
			t.Errorf("a pinned node the run can do without (a node being removed may be down): %v", err)
		}
		got := notAnsweringEvents(t, ns)
		if len(got) != 2 || !slices.ContainsFunc(got, func(e corev1.Event) bool {
			return e.Type == corev1.EventTypeWarning && strings.HasSuffix(e.Message, "; the run goes on without it") &&
				strings.Contains(e.Message, `node "master" (`+addr+`, BareMetalHost `+ns+`/node-1) does not answer SSH, tried at `)
		}) {
			t.Errorf("NodeNotAnswering Events after a run that can do without the node: %+v; want a second, saying the run goes on without it", got)
		}
		raw, err := os.ReadFile(output)
		if err != nil {
			t.Fatal(err)
		}
		silent, err := pinhostkeys.ParseSilent(string(raw))
		if err != nil || len(silent) != 1 || silent[0].TriedAt.Time.Before(before) {
			t.Fatalf("the silent nodes written: %s (%v), want the master tried after %s", raw, err, before)
		}
		silent[0].TriedAt = metav1.Time{}
		if diff := cmp.Diff([]bpav1.SilentNode{{Node: "master", Address: addr}}, silent); diff != "" {
			t.Errorf("the silent nodes written (-want +got):\n%s", diff)
		}
	})
}

// TestPinsFollowTheHosts: a node's new host key is pinned afresh, with an Event saying why, when
// its BareMetalHost was provisioned again since the pin, or when its address now belongs to
// another BareMetalHost; otherwise a changed key stays a final error naming the pin to delete.
func TestPinsFollowTheHosts(t *testing.T) {
	sshd := testsshd.Start(t)
	ns := env.Namespace(t)
	site := env.LoadSite(t, ns)
	p, ref := env.Provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	// As the step pods run it: with the cluster's step identity, which must read the hosts,
	// write the pins and say so in an Event.
	_, asStep := env.StepIdentity(t, p)
	provisioned := func(name string, at time.Time) {
		t.Helper()
		h := env.Host(t, site[name])
		h.Status.OperationHistory.Provision.Start = metav1.NewTime(at)
		if err := env.Client.Status().Update(ctx(), h); err != nil {
			t.Fatal(err)
		}
	}
	on := func(name string) []bpav1.Node {
		return []bpav1.Node{{Label: "master", Role: "master", BareMetalHost: ns + "/" + name, IP: "127.0.0.1"}}
	}
	pin := func(hosts []bpav1.Node) error {
		return pod.Run(ctx(), asStep, ref, hosts, nil, sshd.Port, 10*time.Second, "")
	}
	first := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	provisioned("node-1", first)
	if err := pin(on("node-1")); err != nil {
		t.Fatal(err)
	}

	sshd.RestartWithNewHostKey(t)
	err := pin(on("node-1"))
	if err == nil || steps.IsRetryable(err) || !strings.Contains(err.Error(), "delete key 127.0.0.1_"+strconv.Itoa(sshd.Port)+" of Secret "+ns+"/cluster-abc-known-hosts") {
		t.Fatalf("a new key on a host not provisioned since: %v; want a final error naming the pin to delete", err)
	}

	provisioned("node-1", first.Add(time.Hour))
	if err := pin(on("node-1")); err != nil {
		t.Fatalf("a host provisioned again since the pin: %v; want its new key pinned", err)
	}
	expectPinned(t, ns, sshd)
	expectEvent(t, ns, "BareMetalHost "+ns+"/node-1 was provisioned again (at 2026-01-02T04:04:05Z) since its key was pinned")

	// The address now belongs to another host (DHCP gave it to node-3).
	sshd.RestartWithNewHostKey(t)
	if err := pin(on("node-3")); err != nil {
		t.Fatalf("an address that moved to another host: %v; want its new key pinned", err)
	}
	expectPinned(t, ns, sshd)
	expectEvent(t, ns, "the address was pinned for BareMetalHost "+ns+"/node-1 and now belongs to "+ns+"/node-3")
}

func expectPinned(t *testing.T, ns string, sshd *testsshd.Server) {
	t.Helper()
	sec := &corev1.Secret{}
	if err := env.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cluster-abc-known-hosts"}, sec); err != nil {
		t.Fatal(err)
	}
	if got := string(sec.Data["127.0.0.1_"+strconv.Itoa(sshd.Port)]); got != string(ssh.MarshalAuthorizedKey(sshd.HostKey)) {
		t.Errorf("pinned %q, want the node's new key", got)
	}
	if line := fmt.Sprintf("[127.0.0.1]:%d %s", sshd.Port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshd.HostKey)))); strings.TrimSpace(string(sec.Data[steps.KnownHostsKey])) != line {
		t.Errorf("known_hosts = %q, want only %q", sec.Data[steps.KnownHostsKey], line)
	}
}

func expectEvent(t *testing.T, ns, message string) {
	t.Helper()
	var events corev1.EventList
	if err := env.Client.List(ctx(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "HostKeyRepinned" && e.InvolvedObject.Name == "abc" && strings.Contains(e.Message, message) {
			return
		}
	}
	t.Errorf("no HostKeyRepinned Event saying %q among %d Events", message, len(events.Items))
}

func notAnsweringEvents(t *testing.T, ns string) []corev1.Event {
	t.Helper()
	var events corev1.EventList
	if err := env.Client.List(ctx(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range events.Items {
		if e.Reason == bpav1.EventNodeNotAnswering {
			out = append(out, e)
		}
	}
	return out
}
