package testkubespray

import (
	"fmt"
	"slices"
	"strings"
)

const (
	// resetTask is the task of run-kubespray's reset playbook that resets a half-done join
	// (runkubespray.ResetFailedJoinsPlaybook; TestJoinTasksAreThePlaybooks holds them together).
	resetTask = "Reset the half-done join"
	// joinTaskName is kubespray's kubeadm join of a master after the first
	// (roles/kubernetes/control-plane/tasks/kubeadm-secondary.yml), as Ansible names it in a
	// retry's line; joinTask, in its banner.
	joinTaskName = "Joining control plane node to the cluster."
	joinTask     = "kubernetes/control-plane : " + joinTaskName
	// retryPrefix starts the line of Ansible's default callback for a failed attempt of a task
	// with retries: "FAILED - RETRYING: [master2]: Joining control plane node to the cluster.
	// (3 retries left).", which run-kubespray's callback plugin follows with its own lines.
	retryPrefix = "FAILED - RETRYING: ["
)

// JoinAttempt is what the output of one run-kubespray attempt (the reset's playbook, then
// cluster.yml) says of the masters' joins.
type JoinAttempt struct {
	// Reset: the masters the reset's playbook reset at the attempt's start.
	Reset []string
	// Joined and FailedJoins: the masters whose kubeadm join passed, and failed. A join that
	// failed leaves the master half joined, which the next attempt's reset must clear, unless
	// it failed only in its wait (WaitFailed).
	Joined, FailedJoins []string
	// WaitFailed: the masters of FailedJoins whose kubeadm join failed first in its last
	// phase, wait-control-plane, as the plugin's lines show it: every change of the join made,
	// the node marked as control plane, so that the cluster counts it and the reset leaves it
	// (kubespray's retries of the join then fail kubeadm's preflight on those changes).
	WaitFailed []string
	// JoinErrors: why kubeadm's join failed at the attempts kubespray retried, as
	// run-kubespray's callback plugin (runkubespray.FailedAttemptsPlugin) shows them, each
	// with its lines joined ("bpa: [master2] attempt 1 of 4 failed: | msg: ... | ...").
	JoinErrors []string
	// Ended: the output has cluster.yml's recap (the reset's playbook has one of its own). An
	// attempt stopped before it may have left a join half done that its output does not name.
	Ended bool
}

// ParseJoinAttempt reads ansible-playbook's output (its default callback, as run-kubespray's
// log holds it) of one attempt. A task's results follow its banner, but its failed attempts'
// lines come before it: kubespray's ansible.cfg hides skipped hosts (display_skipped_hosts =
// no), so Ansible prints a task's banner with its first result shown, after its retries. The
// plugin's lines are the task's that the retry's line before them names.
func ParseJoinAttempt(out string) JoinAttempt {
	var a JoinAttempt
	task, recaps := "", 0
	inError, retryingJoin := false, false // the line before was the plugin's; the join's retry
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case strings.HasPrefix(line, retryPrefix):
			retryingJoin = retriedTask(line) == joinTaskName
			inError = false
			continue
		case strings.HasPrefix(line, "TASK ["):
			task = strings.TrimPrefix(line[:strings.LastIndex(line, "]")], "TASK [")
		case strings.HasPrefix(line, "PLAY RECAP "):
			recaps++
			task = ""
		case task == resetTask && strings.HasPrefix(line, "changed: ["):
			a.Reset = append(a.Reset, resultHost(line))
		case task == joinTask && (strings.HasPrefix(line, "changed: [") || strings.HasPrefix(line, "ok: [")):
			a.Joined = append(a.Joined, resultHost(line))
		case task == joinTask && strings.HasPrefix(line, "fatal: ["):
			a.FailedJoins = append(a.FailedJoins, resultHost(line))
		case retryingJoin && strings.HasPrefix(line, "bpa: ["):
			a.JoinErrors = append(a.JoinErrors, line)
			inError = true
			continue
		case retryingJoin && inError && strings.HasPrefix(line, "  "):
			a.JoinErrors[len(a.JoinErrors)-1] += " | " + strings.TrimPrefix(strings.TrimPrefix(line, "  "), "| ")
			continue
		}
		inError, retryingJoin = false, false
	}
	a.Ended = recaps >= 2
	for _, h := range a.FailedJoins {
		if first := firstJoinError(a.JoinErrors, h); strings.Contains(first, "error execution phase "+lastJoinPhase+":") {
			a.WaitFailed = append(a.WaitFailed, h)
		}
	}
	return a
}

// retriedTask is the task a retry's line names, without its retries left.
func retriedTask(line string) string {
	name := line[len(retryPrefix):]
	if i := strings.Index(name, "]: "); i >= 0 {
		name = name[i+len("]: "):]
	}
	if i := strings.LastIndex(name, " ("); i >= 0 {
		name = name[:i]
	}
	return name
}

// lastJoinPhase is kubeadm's last phase of a join (kubeadm join --help).
const lastJoinPhase = "wait-control-plane"

// firstJoinError is the first of errors that is host's, or "".
func firstJoinError(errors []string, host string) string {
	for _, e := range errors {
		if strings.HasPrefix(e, "bpa: ["+host+"] ") {
			return e
		}
	}
	return ""
}

// resultHost is the host of a task's result line ("changed: [master2]", "fatal: [master2]:
// FAILED! => ...", "changed: [master2 -> master]").
func resultHost(line string) string {
	host := line[strings.Index(line, "[")+1:]
	if end := strings.IndexAny(host, " ]"); end >= 0 {
		host = host[:end]
	}
	return host
}

// CheckJoinResets says what is wrong with the resets of a run-kubespray step's attempts, in
// their order: an attempt resets exactly the masters that the attempts before it left half
// joined. One that does not reset a half-done join fails kubeadm's preflight again on the
// first join's files; one that resets a joined master takes down a member of a live control
// plane, and so does one that resets a master whose join failed only in its wait. The first
// attempt follows runs that ended well, with nothing half joined. After an attempt that did
// not end, what it left is not known, and only the masters known to be half joined are
// checked.
func CheckJoinResets(attempts []JoinAttempt) error {
	var problems []string
	halfJoined, known := []string{}, true
	for i, a := range attempts {
		for _, h := range halfJoined {
			if !slices.Contains(a.Reset, h) {
				problems = append(problems, fmt.Sprintf("attempt %d did not reset %s, which an attempt before left half joined", i+1, h))
			}
		}
		for _, h := range a.Reset {
			if known && !slices.Contains(halfJoined, h) {
				problems = append(problems, fmt.Sprintf("attempt %d reset %s, which no attempt before left half joined", i+1, h))
			}
		}
		halfJoined = slices.DeleteFunc(halfJoined, func(h string) bool { return slices.Contains(a.Reset, h) })
		for _, h := range a.FailedJoins {
			if !slices.Contains(halfJoined, h) && !slices.Contains(a.WaitFailed, h) {
				halfJoined = append(halfJoined, h)
			}
		}
		slices.Sort(halfJoined)
		known = a.Ended
	}
	if len(problems) > 0 {
		return fmt.Errorf("the resets of half-done joins: %s", strings.Join(problems, "; "))
	}
	return nil
}
