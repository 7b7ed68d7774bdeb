package runkubespray_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// failedAttemptsPlaybook's tasks retry as kubespray's do. The join fails half-way at its first
// attempt, then twice on what the first left (as kubeadm's preflight did on the machines), and
// joins at its fourth; the wait polls until it is ready without failing; the secret's task fails
// once with a secret in its output, under no_log; the chatty one fails with more lines than the
// plugin shows.
const failedAttemptsPlaybook = `- hosts: all
  gather_facts: false
  tasks:
    - name: The join
      ansible.builtin.shell: |
        n=$(cat {{ dir }}/join 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {{ dir }}/join
        echo "[preflight] Running pre-flight checks"
        case $n in
          1) echo "[kubelet-start] Waiting for the kubelet"; echo "error execution phase kubelet-start: timed out" >&2; exit 1 ;;
          2|3) echo "[ERROR FileAvailable]: /etc/kubernetes/kubelet.conf already exists" >&2; exit 1 ;;
        esac
        echo "This node has joined the cluster"
      register: join
      retries: 3
      delay: 0
      until: join is succeeded
    - name: The wait
      ansible.builtin.shell: |
        n=$(cat {{ dir }}/wait 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {{ dir }}/wait
        [ $n -ge 3 ] && echo ready || echo waiting
      register: wait
      retries: 5
      delay: 0
      until: wait.stdout == "ready"
    - name: The secret
      ansible.builtin.shell: |
        [ -e {{ dir }}/secret ] && exit 0; touch {{ dir }}/secret
        echo "token s3cr3t refused" >&2; exit 2
      register: secret
      no_log: true
      retries: 1
      delay: 0
      until: secret is succeeded
    - name: The chatty one
      ansible.builtin.shell: |
        [ -e {{ dir }}/chatty ] && exit 0; touch {{ dir }}/chatty
        seq 1 30 >&2; exit 3
      register: chatty
      retries: 1
      delay: 0
      until: chatty is succeeded
`

// TestFailedAttemptsPlugin runs the callback the step puts on Ansible's path with the real
// ansible-playbook (Debian's), from the file and environment the step's template gives the pod:
// each failed attempt's reason is shown once, an attempt that failed the same way says so, a
// poll that is only waiting shows nothing, and a no_log task's output stays hidden.
func TestFailedAttemptsPlugin(t *testing.T) {
	dir := t.TempDir()
	out, err := runWithPlugins(t, dir, failedAttemptsPlaybook, []string{"--inventory=localhost,", "--connection=local", "--extra-vars=dir=" + dir})
	if err != nil {
		t.Fatalf("ansible-playbook: %v\n%s", err, out)
	}
	want := []string{
		"bpa: [localhost] attempt 1 of 4 failed:",
		"  msg: non-zero return code (rc 1)",
		"  stderr (last 1 of 1 lines):",
		"  | error execution phase kubelet-start: timed out",
		"  stdout (last 2 of 2 lines):",
		"  | [preflight] Running pre-flight checks",
		"  | [kubelet-start] Waiting for the kubelet",
		"bpa: [localhost] attempt 2 of 4 failed:",
		"  msg: non-zero return code (rc 1)",
		"  stderr (last 1 of 1 lines):",
		"  | [ERROR FileAvailable]: /etc/kubernetes/kubelet.conf already exists",
		"  stdout (last 1 of 1 lines):",
		"  | [preflight] Running pre-flight checks",
		"bpa: [localhost] attempt 3 of 4 failed as attempt 2 did",
		"bpa: [localhost] attempt 1 of 2 failed:",
		"  the output has been hidden due to the fact that 'no_log: true' was specified for this result",
		"bpa: [localhost] attempt 1 of 2 failed:",
		"  msg: non-zero return code (rc 3)",
		"  stderr (last 20 of 30 lines):",
	}
	for i := 11; i <= 30; i++ {
		want = append(want, "  | "+strconv.Itoa(i))
	}
	if got := pluginLines(out); !slices.Equal(got, want) {
		t.Errorf("the plugin's lines:\n%s\nwant:\n%s\n\nthe whole output:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), out)
	}
	if strings.Contains(out, "s3cr3t") {
		t.Errorf("a no_log task's output reached the log:\n%s", out)
	}
	if !strings.Contains(out, "ok=4") || !strings.Contains(out, "failed=0") {
		t.Errorf("the playbook did not end as retried:\n%s", out)
	}
}

// pluginLines are the plugin's own lines of ansible-playbook's output: each "bpa: " line and
// the indented lines under it.
func pluginLines(out string) []string {
	var lines []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "bpa: "):
			in = true
		case in && strings.HasPrefix(line, "  "):
		default:
			in = false
			continue
		}
		lines = append(lines, line)
	}
	return lines
}

func envValue(t *testing.T, env []corev1.EnvVar, name string) string {
	t.Helper()
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	t.Fatalf("the step's environment has no %s", name)
	return ""
}

// TestFailedAttemptsPluginSurvivesArgo: the plugin reaches the pod as a raw artifact, whose data
// Argo templates: two opening braces in a row would be read as Argo's own.
func TestFailedAttemptsPluginSurvivesArgo(t *testing.T) {
	if strings.Contains(runkubespray.FailedAttemptsPlugin, "{{") {
		t.Error("bpa_failed_attempts.py holds \"{{\", which Argo would template")
	}
	if !strings.Contains(runkubespray.FailedAttemptsPlugin, "def v2_runner_retry") {
		t.Error("the embedded plugin is not bpa_failed_attempts.py")
	}
}
