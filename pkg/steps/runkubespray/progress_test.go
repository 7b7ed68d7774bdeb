package runkubespray_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

func TestParseProgress(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       runkubespray.Progress
		isLine     bool
		err        string
	}{
		{name: "another line", line: "TASK [etcd : Configure] ****"},
		{name: "the prefix inside a line", line: "ok: [master] => bpa-progress: {}"},
		{
			name:   "a play running",
			line:   `bpa-progress: {"done":4,"failed":[],"play":"Install etcd","playbook":"cluster.yml","plays":31,"task":"etcd : Configure | Check if etcd cluster is healthy","tasks":412,"unreachable":["worker-2"]}`,
			isLine: true,
			want: runkubespray.Progress{Playbook: "cluster.yml", Done: 4, Plays: 31, Play: "Install etcd",
				Task: "etcd : Configure | Check if etcd cluster is healthy", Tasks: 412, Failed: []string{}, Unreachable: []string{"worker-2"}},
		},
		{
			name:   "a carriage return kept by the log",
			line:   "bpa-progress: {\"done\":1,\"failed\":[],\"play\":\"\",\"playbook\":\"facts.yml\",\"plays\":1,\"task\":\"\",\"tasks\":3,\"unreachable\":[]}\r",
			isLine: true,
			want:   runkubespray.Progress{Playbook: "facts.yml", Done: 1, Plays: 1, Tasks: 3, Failed: []string{}, Unreachable: []string{}},
		},
		{name: "not JSON", line: "bpa-progress: plays 4/31", isLine: true, err: "progress line: invalid character"},
		{name: "a field the plugin does not write", line: `bpa-progress: {"playbook":"a.yml","plays":1,"token":"x"}`, isLine: true, err: `unknown field "token"`},
		{name: "two reports", line: `bpa-progress: {"playbook":"a.yml","plays":1} {"playbook":"a.yml","plays":1}`, isLine: true, err: "text after the report"},
		{name: "more done than plays", line: `bpa-progress: {"playbook":"a.yml","plays":3,"done":4}`, isLine: true, err: "plays done 4 of 3"},
		{name: "no plays", line: `bpa-progress: {"playbook":"a.yml","plays":0}`, isLine: true, err: "plays done 0 of 0"},
		{name: "negative tasks", line: `bpa-progress: {"playbook":"a.yml","plays":1,"tasks":-1}`, isLine: true, err: "tasks -1"},
		{name: "no playbook", line: `bpa-progress: {"plays":1}`, isLine: true, err: "playbook: empty"},
		{name: "a newline in a task", line: `bpa-progress: {"playbook":"a.yml","plays":1,"task":"x\nREADY"}`, isLine: true, err: `task: character "\n" at 1`},
		{name: "a long play", line: `bpa-progress: {"playbook":"a.yml","plays":1,"play":"` + strings.Repeat("é", 201) + `"}`, isLine: true, err: "play: longer than 200"},
		{name: "a host with shell syntax", line: `bpa-progress: {"playbook":"a.yml","plays":1,"failed":["w1;reboot"]}`, isLine: true, err: `failed: host "w1;reboot"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, isLine, err := runkubespray.ParseProgress(tc.line)
			if isLine != tc.isLine {
				t.Fatalf("is a progress line: %v, want %v", isLine, tc.isLine)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLastProgress(t *testing.T) {
	first := `bpa-progress: {"done":0,"failed":[],"play":"Check Ansible version","playbook":"cluster.yml","plays":31,"task":"","tasks":0,"unreachable":[]}`
	second := `bpa-progress: {"done":5,"failed":["worker-1"],"play":"Install etcd","playbook":"cluster.yml","plays":31,"task":"etcd : Install","tasks":90,"unreachable":[]}`
	for _, tc := range []struct {
		name string
		log  string
		want *runkubespray.Progress
	}{
		{name: "empty"},
		{name: "no progress yet", log: "PLAY [Check Ansible version] ***\n"},
		{name: "one line, no newline after it", log: "PLAY [x]\n" + first,
			want: &runkubespray.Progress{Playbook: "cluster.yml", Plays: 31, Play: "Check Ansible version", Failed: []string{}, Unreachable: []string{}}},
		{name: "the newest of two", log: first + "\nok: [master]\n" + second + "\nfatal: [worker-1]: FAILED!\n",
			want: &runkubespray.Progress{Playbook: "cluster.yml", Done: 5, Plays: 31, Play: "Install etcd", Task: "etcd : Install", Tasks: 90,
				Failed: []string{"worker-1"}, Unreachable: []string{}}},
		{name: "a newest line that does not parse leaves the one before", log: second + "\nbpa-progress: {\"plays\":\n",
			want: &runkubespray.Progress{Playbook: "cluster.yml", Done: 5, Plays: 31, Play: "Install etcd", Task: "etcd : Install", Tasks: 90,
				Failed: []string{"worker-1"}, Unreachable: []string{}}},
		{name: "a line cut by the tail's start is passed over", log: `ess: {"done":5}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := runkubespray.LastProgress([]byte(tc.log))
			if ok != (tc.want != nil) {
				t.Fatalf("found %v (%+v), want %v", ok, got, tc.want != nil)
			}
			if tc.want != nil {
				if diff := cmp.Diff(*tc.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestProgressSummary(t *testing.T) {
	for _, tc := range []struct {
		p    runkubespray.Progress
		want string
	}{
		{runkubespray.Progress{Playbook: "cluster.yml", Done: 4, Plays: 31, Play: "Install etcd", Task: "etcd : Install"}, "cluster.yml 4/31 plays: etcd : Install"},
		{runkubespray.Progress{Playbook: "cluster.yml", Done: 4, Plays: 31, Play: "Install etcd"}, "cluster.yml 4/31 plays: Install etcd"},
		{runkubespray.Progress{Playbook: "cluster.yml", Done: 31, Plays: 31, Play: "Apply resolv.conf"}, "cluster.yml 31/31 plays"},
		{runkubespray.Progress{Playbook: "scale.yml", Done: 2, Plays: 9, Task: "kubeadm : Join", Failed: []string{"worker-3"}, Unreachable: []string{"worker-1", "worker-2"}},
			"scale.yml 2/9 plays: kubeadm : Join (failed: worker-3; unreachable: worker-1, worker-2)"},
		{runkubespray.Progress{Playbook: "upgrade-cluster.yml", Done: 2, Plays: 9, Unreachable: []string{"w1", "w2", "w3", "w4", "w5"}},
			"upgrade-cluster.yml 2/9 plays (unreachable: w1, w2, w3 and 2 more)"},
	} {
		if got := tc.p.Summary(); got != tc.want {
			t.Errorf("Summary() = %q, want %q", got, tc.want)
		}
	}
}

// FuzzParseProgress: whatever a pod writes on its log, a line parses to a report that passes
// the checks, or to an error; nothing panics.
func FuzzParseProgress(f *testing.F) {
	for _, s := range []string{
		`bpa-progress: {"done":4,"failed":[],"play":"Install etcd","playbook":"cluster.yml","plays":31,"task":"x","tasks":412,"unreachable":["worker-2"]}`,
		`bpa-progress: {"playbook":"a.yml","plays":1,"task":"x\u0000"}`,
		"bpa-progress: ", "bpa-progress: null", "TASK [x]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		p, isLine, err := runkubespray.ParseProgress(line)
		if !isLine || err != nil {
			return
		}
		if p.Done < 0 || p.Done > p.Plays || p.Playbook == "" || strings.ContainsAny(p.Task+p.Play+p.Playbook, "\n\r") {
			t.Fatalf("%q parsed to %+v", line, p)
		}
		if got, ok := runkubespray.LastProgress([]byte("x\n" + line + "\n")); !ok || !cmp.Equal(got, p) {
			t.Fatalf("LastProgress of the line alone: %+v %v, want %+v", got, ok, p)
		}
	})
}
