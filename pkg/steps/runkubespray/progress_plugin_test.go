package runkubespray_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// progressPlaybook has what a kubespray playbook has that the plugin must count right: a play
// no host matches, a serial play (Ansible starts it once per batch), a task that runs long, a
// failure ignored and one a block rescues. Host b fails the last play when fail_b is set.
const progressPlaybook = `- name: Prepare
  hosts: all
  gather_facts: false
  tasks:
    - name: Quick
      ansible.builtin.command: "true"
    - name: Wait for the slow part
      ansible.builtin.command: sleep 7
      run_once: true
- name: Nobody
  hosts: calico_rr
  gather_facts: false
  tasks:
    - name: Never
      ansible.builtin.command: "true"
- name: One at a time
  hosts: all
  serial: 1
  gather_facts: false
  tasks:
    - name: Ignored
      ansible.builtin.command: "false"
      ignore_errors: true
    - name: Rescued
      block:
        - name: Fails
          ansible.builtin.command: "false"
      rescue:
        - name: Rescues
          ansible.builtin.command: "true"
    - name: The real failure
      ansible.builtin.command: "false"
      when: fail_b | default(false) and inventory_hostname == "b"
`

// runWithPlugins runs playbook with the real ansible-playbook (Debian's) and the callback
// plugins where the step's template places them, moved under dir; env adds to the
// environment. It returns the output and the exit error.
func runWithPlugins(t *testing.T, dir, playbook string, args []string, env ...string) (string, error) {
	t.Helper()
	ansible, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Fatalf("ansible-playbook is missing: run `make test-deps` (Debian ansible-core)")
	}
	tmpl, err := runkubespray.Template("kubespray:test", runkubespray.Plan{Mode: runkubespray.ModeCreate})
	if err != nil {
		t.Fatal(err)
	}
	pluginDir := filepath.Join(dir, runkubespray.CallbackPluginsDir)
	placed := 0
	for _, a := range tmpl.Inputs.Artifacts {
		if filepath.Dir(a.Path) != runkubespray.CallbackPluginsDir {
			continue
		}
		if err := os.MkdirAll(pluginDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, a.Path), []byte(a.Raw.Data), 0o444); err != nil {
			t.Fatal(err)
		}
		placed++
	}
	if placed != 2 {
		t.Fatalf("run-kubespray's template places %d callback plugins in %s, want 2: %+v", placed, runkubespray.CallbackPluginsDir, tmpl.Inputs.Artifacts)
	}
	book := filepath.Join(dir, "playbook.yml")
	if err := os.WriteFile(book, []byte(playbook), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(ansible, append(args, book)...)
	cmd.Env = append(os.Environ(), "ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "ansible-tmp"), "ANSIBLE_FORCE_COLOR=False",
		"ANSIBLE_NOCOLOR=True", "ANSIBLE_RETRY_FILES_ENABLED=False", "ANSIBLE_CALLBACK_PLUGINS="+strings.Replace(envValue(t, tmpl.Container.Env, "ANSIBLE_CALLBACK_PLUGINS"),
			runkubespray.CallbackPluginsDir, pluginDir, 1))
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// progressLines are the plugin's reports in an output, parsed.
func progressLines(t *testing.T, out string) []runkubespray.Progress {
	t.Helper()
	var got []runkubespray.Progress
	for _, line := range strings.Split(out, "\n") {
		p, ok, err := runkubespray.ParseProgress(line)
		if err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		if ok {
			got = append(got, p)
		}
	}
	return got
}

// TestProgressPlugin runs the callback the step puts on Ansible's path with the real
// ansible-playbook: the plays done reach Argo's progress file, and its lines say the play, the
// long task, and at the end every play done; a play that matches no host counts, a serial one
// counts once, a failure ignored or rescued is no failure.
func TestProgressPlugin(t *testing.T) {
	dir := t.TempDir()
	progressFile := filepath.Join(dir, "progress")
	out, err := runWithPlugins(t, dir, progressPlaybook, []string{"--inventory=a,b", "--connection=local"}, "ARGO_PROGRESS_FILE="+progressFile)
	if err != nil {
		t.Fatalf("ansible-playbook: %v\n%s", err, out)
	}
	report := func(done int32, play, task string, tasks int32) runkubespray.Progress {
		return runkubespray.Progress{Playbook: "playbook.yml", Plays: 3, Done: done, Play: play, Task: task, Tasks: tasks,
			Failed: []string{}, Unreachable: []string{}}
	}
	want := []runkubespray.Progress{
		report(0, "Prepare", "", 0),
		report(0, "Prepare", "Wait for the slow part", 2),
		report(1, "Nobody", "", 2),
		report(2, "One at a time", "", 2),
		report(2, "One at a time", "", 6),
		report(3, "One at a time", "", 10),
	}
	if diff := cmp.Diff(want, progressLines(t, out)); diff != "" {
		t.Errorf("the plugin's reports (-want +got):\n%s\n\nthe whole output:\n%s", diff, out)
	}
	if got, err := os.ReadFile(progressFile); err != nil || string(got) != "3/3\n" {
		t.Errorf("Argo's progress file holds %q (%v), want \"3/3\\n\"", got, err)
	}
}

// TestProgressPluginStopsWhereTheRunFailed: the plays done stay where a failure broke the run,
// the host is named, and a playbook run with ARGO_PROGRESS_FILE empty (a script preparing the
// run) writes no file.
func TestProgressPluginStopsWhereTheRunFailed(t *testing.T) {
	dir := t.TempDir()
	progressFile := filepath.Join(dir, "progress")
	out, err := runWithPlugins(t, dir, progressPlaybook, []string{"--inventory=a,b", "--connection=local", "--extra-vars=" + `{"fail_b": true}`},
		"ARGO_PROGRESS_FILE="+progressFile)
	if err == nil {
		t.Fatalf("ansible-playbook succeeded with b failing:\n%s", out)
	}
	got := progressLines(t, out)
	if len(got) < 2 {
		t.Fatalf("%d reports:\n%s", len(got), out)
	}
	failedLine, last := got[len(got)-2], got[len(got)-1]
	want := runkubespray.Progress{Playbook: "playbook.yml", Plays: 3, Done: 2, Play: "One at a time", Tasks: 10,
		Failed: []string{"b"}, Unreachable: []string{}}
	if diff := cmp.Diff(want, last); diff != "" {
		t.Errorf("the last report (-want +got):\n%s\n\nthe whole output:\n%s", diff, out)
	}
	if failedLine.Task != "The real failure" || !cmp.Equal(failedLine.Failed, []string{"b"}) {
		t.Errorf("the report when b failed: %+v", failedLine)
	}
	if got, err := os.ReadFile(progressFile); err != nil || string(got) != "2/3\n" {
		t.Errorf("Argo's progress file holds %q (%v), want \"2/3\\n\"", got, err)
	}

	preparing := t.TempDir()
	if out, err := runWithPlugins(t, preparing, progressPlaybook, []string{"--inventory=a", "--connection=local"}, "ARGO_PROGRESS_FILE="); err != nil {
		t.Fatalf("ansible-playbook: %v\n%s", err, out)
	}
	if entries, _ := filepath.Glob(filepath.Join(preparing, "*progress*")); len(entries) > 0 {
		t.Errorf("with ARGO_PROGRESS_FILE empty, the plugin wrote %v", entries)
	}
}

// TestProgressPluginSurvivesArgo: like bpa_failed_attempts.py, the plugin is a raw artifact's
// data, which Argo templates.
func TestProgressPluginSurvivesArgo(t *testing.T) {
	if strings.Contains(runkubespray.ProgressPlugin, "{{") {
		t.Error("bpa_progress.py holds \"{{\", which Argo would template")
	}
	if !strings.Contains(runkubespray.ProgressPlugin, `CALLBACK_NAME = "`+strings.TrimSuffix(runkubespray.ProgressPluginFile, ".py")+`"`) {
		t.Error("the embedded plugin is not " + runkubespray.ProgressPluginFile)
	}
}
