package testkubespray

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// The outputs under testdata/joins are excerpts of run-kubespray's attempts on the emulated
// machines (make e2e-cluster E2E_CLUSTER=master-added, the containers' log prefixes removed):
// join-failed, kubeadm's join of master2 failing; reset-missed, the attempt after it, whose
// reset misread master2's answer and reset nothing; joined-then-failed, master2 joined and
// cluster.yml failing later on the first master; stopped, an attempt stopped in cluster.yml;
// reset-cleared, the start of the attempt after another failed join, whose reset cleared
// master2; joined-first-time, master2 joined at kubeadm's first attempt, then kubespray's wait
// for it to be Ready retried on the first master, its plugin's lines after the join's banner.
func joinOutput(t *testing.T, name string) JoinAttempt {
	t.Helper()
	out, err := os.ReadFile(filepath.Join("testdata", "joins", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	return ParseJoinAttempt(string(out))
}

func TestParseJoinAttempt(t *testing.T) {
	for _, c := range []struct {
		name string
		want JoinAttempt
	}{
		{"join-failed", JoinAttempt{FailedJoins: []string{"master2"}, Ended: true}},
		{"reset-missed", JoinAttempt{}},
		{"joined-then-failed", JoinAttempt{Joined: []string{"master2"}, Ended: true}},
		{"stopped", JoinAttempt{}},
		{"reset-cleared", JoinAttempt{Reset: []string{"master2"}}},
		{"joined-first-time", JoinAttempt{Joined: []string{"master2"}, Ended: true}},
	} {
		if got := joinOutput(t, c.name); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	reset := "TASK [" + resetTask + "] ****\nchanged: [master2]\nskipping: [master3]\n\nTASK [" + joinTask + "] ***\n" +
		"changed: [master3 -> master]\nfatal: [master4]: FAILED! => {}\nPLAY RECAP ***\nPLAY RECAP ***\n"
	want := JoinAttempt{Reset: []string{"master2"}, Joined: []string{"master3"}, FailedJoins: []string{"master4"}, Ended: true}
	if got := ParseJoinAttempt(reset); !reflect.DeepEqual(got, want) {
		t.Errorf("%+v, want %+v", got, want)
	}
	// run-kubespray's callback plugin's lines (as TestFailedAttemptsPlugin has them) after the
	// join's retries, which come before its banner (kubespray's display_skipped_hosts = no);
	// its lines after another task's retries are not the join's, even under the join's banner.
	plugin := "TASK [other] ***\nok: [master]\n" +
		"FAILED - RETRYING: [master2]: " + joinTaskName + " (3 retries left).\n" +
		"bpa: [master2] attempt 1 of 4 failed:\n  msg: non-zero return code (rc 1)\n  stderr (last 1 of 1 lines):\n" +
		"  | error execution phase kubelet-start: timed out\n" +
		"FAILED - RETRYING: [master2]: " + joinTaskName + " (2 retries left).\nbpa: [master2] attempt 2 of 4 failed as attempt 1 did\n" +
		"\nTASK [" + joinTask + "] ***\nchanged: [master2]\n" +
		"FAILED - RETRYING: [master]: Wait for new control plane nodes to be Ready (24 retries left).\n" +
		"bpa: [master] attempt 1 of 25 failed:\n  msg: no\n"
	want = JoinAttempt{Joined: []string{"master2"}, JoinErrors: []string{
		"bpa: [master2] attempt 1 of 4 failed: | msg: non-zero return code (rc 1) | stderr (last 1 of 1 lines): | error execution phase kubelet-start: timed out",
		"bpa: [master2] attempt 2 of 4 failed as attempt 1 did",
	}}
	if got := ParseJoinAttempt(plugin); !reflect.DeepEqual(got, want) {
		t.Errorf("the plugin's lines:\n%+v,\nwant %+v", got, want)
	}
	if got := ParseJoinAttempt(waitFailedOutput); !reflect.DeepEqual(got.WaitFailed, []string{"master2"}) || !reflect.DeepEqual(got.FailedJoins, []string{"master2"}) {
		t.Errorf("a join that failed in its wait: %+v", got)
	}
	if got := ParseJoinAttempt(strings.Replace(waitFailedOutput, "phase wait-control-plane:", "phase kubelet-start:", 1)); got.WaitFailed != nil {
		t.Errorf("a join that failed in kubelet-start counted as failed in its wait: %+v", got)
	}
	if got := ParseJoinAttempt(strings.Replace(waitFailedOutput, "bpa: [master2]", "bpa: [master3]", 1)); got.WaitFailed != nil {
		t.Errorf("another master's wait counted as master2's: %+v", got)
	}
	if got := ParseJoinAttempt("TASK [" + resetTask + "] ***\nchanged: [master2"); !reflect.DeepEqual(got.Reset, []string{"master2"}) {
		t.Errorf("a line cut short: %+v", got)
	}
}

// waitFailedOutput is a join that failed first in kubeadm's last phase, then on kubeadm's
// preflight, as run-kubespray's log shows it with its callback plugin: kubeadm's error is the
// machines' (make e2e-cluster E2E_CLUSTER=master-added, kept by hand), the rest
// is the plugin's format (TestFailedAttemptsPlugin).
const waitFailedOutput = "TASK [kubernetes/control-plane : Create kubeadm ControlPlane config] ***\nchanged: [master2]\n" +
	"FAILED - RETRYING: [master2]: Joining control plane node to the cluster. (3 retries left).\n" +
	"bpa: [master2] attempt 1 of 4 failed:\n  msg: non-zero return code (rc 1)\n  stderr (last 2 of 2 lines):\n" +
	"  | error execution phase wait-control-plane: failed while waiting for the control plane to start: kube-apiserver check failed at https://10.250.0.12:6443/livez: Get \"https://10.250.0.12:6443/livez?timeout=10s\": context deadline exceeded\n" +
	"  | To see the stack trace of this error execute with --v=5 or higher\n" +
	"FAILED - RETRYING: [master2]: Joining control plane node to the cluster. (2 retries left).\n" +
	"bpa: [master2] attempt 2 of 4 failed:\n  msg: non-zero return code (rc 1)\n  stderr (last 1 of 1 lines):\n" +
	"  | error: error execution phase preflight: preflight checks failed\n" +
	"\nTASK [" + joinTask + "] ***\nfatal: [master2]: FAILED! => {}\nPLAY RECAP ***\nPLAY RECAP ***\n"

func TestCheckJoinResets(t *testing.T) {
	waitFailed := ParseJoinAttempt(waitFailedOutput)
	resetMaster2 := JoinAttempt{Reset: []string{"master2"}, Joined: []string{"master2"}, Ended: true}
	joinFailed, resetMissed := joinOutput(t, "join-failed"), joinOutput(t, "reset-missed")
	joinedThenFailed, stopped := joinOutput(t, "joined-then-failed"), joinOutput(t, "stopped")
	resetCleared := joinOutput(t, "reset-cleared")
	for _, c := range []struct {
		name     string
		attempts []JoinAttempt
		want     string // a part of the error, or "" for none
	}{
		{"one attempt, nothing reset", []JoinAttempt{joinedThenFailed}, ""},
		{"the machines' missed reset", []JoinAttempt{joinFailed, resetMissed}, "attempt 2 did not reset master2, which an attempt before left half joined"},
		{"a failed join reset", []JoinAttempt{joinFailed, resetMaster2}, ""},
		{"the machines' reset of a failed join", []JoinAttempt{joinFailed, resetCleared}, ""},
		{"the machines' reset of a joined master", []JoinAttempt{joinedThenFailed, resetCleared}, "attempt 2 reset master2"},
		{"a joined master left alone", []JoinAttempt{joinedThenFailed, resetMissed}, ""},
		{"a joined master reset", []JoinAttempt{joinedThenFailed, resetMaster2}, "attempt 2 reset master2, which no attempt before left half joined"},
		{"a reset on the first attempt", []JoinAttempt{resetMaster2}, "attempt 1 reset master2"},
		{"after an attempt stopped, a reset is not judged", []JoinAttempt{stopped, resetMaster2}, ""},
		{"a failed join, an attempt stopped, the reset after it", []JoinAttempt{joinFailed, stopped, resetMaster2},
			"attempt 2 did not reset master2"},
		{"failed twice, reset twice", []JoinAttempt{joinFailed, {Reset: []string{"master2"}, FailedJoins: []string{"master2"}, Ended: true}, resetMaster2}, ""},
		{"reset, then joined, then reset again", []JoinAttempt{joinFailed, resetMaster2, resetMaster2}, "attempt 3 reset master2"},
		{"failed in its wait, left alone", []JoinAttempt{waitFailed, {Ended: true}}, ""},
		{"failed in its wait, reset", []JoinAttempt{waitFailed, resetMaster2}, "attempt 2 reset master2, which no attempt before left half joined"},
	} {
		err := CheckJoinResets(c.attempts)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestJoinTasksAreThePlaybooks: the reset's task the parser reads is the one run-kubespray's
// playbook names (kubespray's join task is held by the end-to-end tests, which find the master
// they add joined in it).
func TestJoinTasksAreThePlaybooks(t *testing.T) {
	if !strings.Contains(runkubespray.ResetFailedJoinsPlaybook, "- name: "+resetTask+"\n") {
		t.Errorf("run-kubespray's reset playbook has no task %q:\n%s", resetTask, runkubespray.ResetFailedJoinsPlaybook)
	}
}
