package runkubespray

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLimitedRunsGatherOnlyWhatIsMissing runs a scale run's and an upgrade wave's compiled
// commands (the wave's once Argo has put its limit in) with an ansible-playbook and a python3
// that record their arguments: the kept facts restored first, facts.yml only for the nodes the
// restore names (every node's when the kept facts cannot be read, none when all are fresh),
// then the playbook limited to the run's nodes, then what the run gathered saved, whatever the
// playbook's status; a failed facts.yml stops the run with its status.
func TestLimitedRunsGatherOnlyWhatIsMissing(t *testing.T) {
	common := "--inventory=/inputs/hosts.ini --private-key=/etc/bpa/ssh/id --become --extra-vars=@/inputs/extra-vars.json --extra-vars=credentials_dir=/tmp/credentials"
	scale := Plan{Mode: ModeScale, Nodes: []string{"worker-3", "worker-4"}}
	wave := Plan{Mode: ModeUpgrade, KubernetesVersion: "1.34.3", Waves: [][]string{{"worker-1", "worker-2"}}}
	const restore, save = "python3 /inputs/bpa_kubespray_facts.py restore ", "python3 /inputs/bpa_kubespray_facts.py save\n"
	for _, tc := range []struct {
		name                string
		plan                Plan
		gather, restoreExit string
		factsExit, playExit string
		wantCalls           string
		wantExit            int
	}{
		{name: "scale, every other node's facts kept", plan: scale, wantCalls: restore + "worker-3,worker-4\n" +
			common + " --limit=worker-3,worker-4 scale.yml\n" + save},
		{name: "scale, the master's facts stale", plan: scale, gather: "master", wantCalls: restore + "worker-3,worker-4\n" +
			common + " --limit=master playbooks/facts.yml\n" + common + " --limit=worker-3,worker-4 scale.yml\n" + save},
		{name: "scale, the kept facts unreadable", plan: scale, restoreExit: "1", wantCalls: restore + "worker-3,worker-4\n" +
			common + " --limit=all playbooks/facts.yml\n" + common + " --limit=worker-3,worker-4 scale.yml\n" + save},
		{name: "scale, a silent node's facts needed and none kept", plan: scale, restoreExit: "3", wantExit: 3,
			wantCalls: restore + "worker-3,worker-4\n"},
		{name: "scale, facts.yml failing", plan: scale, gather: "master", factsExit: "4", wantExit: 4, wantCalls: restore + "worker-3,worker-4\n" +
			common + " --limit=master playbooks/facts.yml\n"},
		{name: "scale.yml failing", plan: scale, playExit: "2", wantExit: 2, wantCalls: restore + "worker-3,worker-4\n" +
			common + " --limit=worker-3,worker-4 scale.yml\n" + save},
		{name: "a wave, the masters' facts stale", plan: wave, gather: "master-1,master-2", wantCalls: restore + "worker-1,worker-2\n" +
			common + " --extra-vars=serial=100% --limit=master-1,master-2 playbooks/facts.yml\n" +
			common + " --extra-vars=serial=100% --limit=worker-1,worker-2 upgrade-cluster.yml\n" + save},
		{name: "a removal", plan: Plan{Mode: ModeRemove, Nodes: []string{"worker-1"}}, wantCalls: restore + "worker-1\n" + common +
			" --extra-vars=node=worker-1 --extra-vars=skip_confirmation=true --extra-vars=@/inputs/removal-vars.json --limit=worker-1 remove-node.yml\n" + save},
		{name: "a wave failing", plan: wave, playExit: "3", wantExit: 3, wantCalls: restore + "worker-1,worker-2\n" +
			common + " --extra-vars=serial=100% --limit=worker-1,worker-2 upgrade-cluster.yml\n" + save},
	} {
		t.Run(tc.name, func(t *testing.T) {
			command, args, err := tc.plan.Command()
			if err != nil {
				t.Fatal(err)
			}
			if tc.plan.Mode == ModeUpgrade {
				if args[1] != "{{inputs.parameters."+LimitParam+"}}" {
					t.Fatalf("the limit is %q, want the task's parameter", args[1])
				}
				args[1] = "worker-1,worker-2"
			}
			calls := runWithFakes(t, command, args, map[string]string{
				"ansible-playbook": "echo \"$*\" >> $RECORD\ncase \"$*\" in *facts.yml) exit ${FACTS_EXIT:-0};; esac\nexit ${PLAY_EXIT:-0}\n",
				"python3":          "echo \"python3 $*\" >> $RECORD\n[ \"$2\" = restore ] && echo \"$GATHER\"\nexit ${RESTORE_EXIT:-0}\n",
			}, tc.wantExit, "GATHER="+tc.gather, "RESTORE_EXIT="+tc.restoreExit, "FACTS_EXIT="+tc.factsExit, "PLAY_EXIT="+tc.playExit)
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("the run called (-want +got):\n%s", diff)
			}
		})
	}
}

// runWithFakes runs a compiled command with the fake tools given (name → the script's body,
// $RECORD the file they record to) first on PATH, and returns what they recorded; the run
// must end with wantExit.
func runWithFakes(t *testing.T, command, args []string, fakes map[string]string, wantExit int, env ...string) string {
	t.Helper()
	bin := t.TempDir()
	record := filepath.Join(t.TempDir(), "calls")
	for name, body := range fakes {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(command[0], append(command[1:], args...)...)
	cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin", "RECORD=" + record, "TMPDIR=" + t.TempDir()}, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if code != wantExit {
		t.Errorf("the run exited %d, want %d:\n%s", code, wantExit, out)
	}
	calls, _ := os.ReadFile(record)
	return string(calls)
}

// TestClusterRunKeepsItsFacts: cluster.yml, then what it gathered saved, whatever its status.
func TestClusterRunKeepsItsFacts(t *testing.T) {
	command, args, err := Plan{Mode: ModeCreate}.Command()
	if err != nil {
		t.Fatal(err)
	}
	common := "--inventory=/inputs/hosts.ini --private-key=/etc/bpa/ssh/id --become --extra-vars=@/inputs/extra-vars.json --extra-vars=credentials_dir=/tmp/credentials"
	for _, status := range []int{0, 2} {
		calls := runWithFakes(t, command, args, map[string]string{
			"ansible-playbook": "echo \"$*\" >> $RECORD\nexit $PLAY_EXIT\n",
			"python3":          "echo \"python3 $*\" >> $RECORD\n",
		}, status, fmt.Sprintf("PLAY_EXIT=%d", status))
		if diff := cmp.Diff(common+" cluster.yml\npython3 /inputs/bpa_kubespray_facts.py save\n", calls); diff != "" {
			t.Errorf("cluster.yml exiting %d: the run called (-want +got):\n%s", status, diff)
		}
	}
}

// TestPlansRefused: a plan no run can have is refused, naming what is wrong.
func TestPlansRefused(t *testing.T) {
	for _, tc := range []struct {
		plan    Plan
		wantErr string
	}{
		{plan: Plan{Mode: ModeCreate, Nodes: []string{"worker-1"}}, wantErr: "takes no nodes"},
		{plan: Plan{Mode: ModeScale}, wantErr: "needs the nodes to add"},
		{plan: Plan{Mode: ModeRemove}, wantErr: "needs the nodes to remove"},
		{plan: Plan{Mode: ModeScale, Nodes: []string{"w;reboot"}}, wantErr: `kubespray node "w;reboot"`},
		{plan: Plan{Mode: "sync"}, wantErr: `unknown kubespray mode "sync"`},
		{plan: Plan{Mode: ModeUpgrade}, wantErr: "needs the version to upgrade to"},
		{plan: Plan{Mode: ModeUpgrade, KubernetesVersion: "1.34.3", Nodes: []string{"worker-1"}}, wantErr: "takes no nodes"},
		{plan: Plan{Mode: ModeUpgrade, KubernetesVersion: "1.34.3", Waves: [][]string{{"w;reboot"}}}, wantErr: `kubespray node "w;reboot"`},
		{plan: Plan{Mode: ModeCreate, Joining: []string{"m;reboot"}}, wantErr: `kubespray node "m;reboot"`},
		{plan: Plan{Mode: ModeScale, Nodes: []string{"worker-1"}, Joining: []string{"master-2"}}, wantErr: `kubespray mode "scale" adds no masters`},
	} {
		if _, _, err := tc.plan.Command(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%+v: %v, want %q", tc.plan, err, tc.wantErr)
		}
	}
}

// TestRenewalRunsKubespraysRenewal: a renewal, as its pod runs it with the control plane's
// limit: the renewal playbook written to the pod's scratch space as it is, then run by
// ansible-playbook with the step's arguments and the limit; no upgrade-cluster.yml, whose run
// at the cluster's own version renewed only the kubeconfigs of admins.
func TestRenewalRunsKubespraysRenewal(t *testing.T) {
	command, args, err := Plan{Mode: ModeRenewCertificates, KubernetesVersion: "1.34.3"}.Command()
	if err != nil {
		t.Fatal(err)
	}
	args[1] = ControlPlaneLimit
	bin, scratch := t.TempDir(), t.TempDir()
	record := filepath.Join(t.TempDir(), "calls")
	// The fake ansible-playbook records its arguments and the playbook it was given.
	fake := "#!/bin/sh\necho \"$*\" >> " + record + "\nfor a; do p=$a; done\ncat \"$p\" > " + record + ".playbook\n"
	if err := os.WriteFile(filepath.Join(bin, "ansible-playbook"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(command[0], append(command[1:], args...)...)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "TMPDIR=" + scratch}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	calls, _ := os.ReadFile(record)
	want := "--inventory=/inputs/hosts.ini --private-key=/etc/bpa/ssh/id --become --extra-vars=@/inputs/extra-vars.json --extra-vars=credentials_dir=/tmp/credentials " +
		"--extra-vars=bpa_silent_nodes_file=/inputs/silent-nodes.json --limit=kube_control_plane:etcd " +
		filepath.Join(scratch, RenewCertificatesPlaybookFile) + "\n"
	if string(calls) != want {
		t.Errorf("the renewal called\n%s\nwant\n%s", calls, want)
	}
	if playbook, _ := os.ReadFile(record + ".playbook"); string(playbook) != RenewCertificatesPlaybook {
		t.Errorf("the renewal ran the playbook\n%s\nwant\n%s", playbook, RenewCertificatesPlaybook)
	}
	if _, _, err := (Plan{Mode: ModeRenewCertificates, Nodes: []string{"master"}}).Command(); err == nil {
		t.Errorf("a renewal limited to nodes was accepted")
	}
}

// TestMastersJoiningResetHalfDoneJoinsFirst: a cluster.yml that adds masters, as its pod runs
// it: the reset's playbook written to the pod's scratch space as it is and run limited to the
// masters joining, then cluster.yml over every node with the same arguments; a reset that
// fails stops the run before cluster.yml.
func TestMastersJoiningResetHalfDoneJoinsFirst(t *testing.T) {
	command, args, err := Plan{Mode: ModeCreate, ControlPlane: []string{"master", "master-2", "master-3"}, Joining: []string{"master-2", "master-3"}}.Command()
	if err != nil {
		t.Fatal(err)
	}
	common := "--inventory=/inputs/hosts.ini --private-key=/etc/bpa/ssh/id --become --extra-vars=@/inputs/extra-vars.json --extra-vars=credentials_dir=/tmp/credentials"
	for _, tc := range []struct {
		name, status, want string
	}{
		{"the reset passes", "0", common + " --limit=master-2,master-3 %s\n" + common + " cluster.yml\n"},
		{"the reset fails", "2", common + " --limit=master-2,master-3 %s\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin, scratch := t.TempDir(), t.TempDir()
			record := filepath.Join(t.TempDir(), "calls")
			// The fake ansible-playbook records its arguments and, for the reset, the playbook
			// it was given and the status the case wants.
			fake := "#!/bin/sh\necho \"$*\" >> " + record + "\nfor a; do p=$a; done\ncase $p in *.yml) [ -f \"$p\" ] && cat \"$p\" > " + record + ".playbook && exit " + tc.status + ";; esac\nexit 0\n"
			if err := os.WriteFile(filepath.Join(bin, "ansible-playbook"), []byte(fake), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(command[0], append(command[1:], args...)...)
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "TMPDIR=" + scratch}
			out, err := cmd.CombinedOutput()
			if (err != nil) != (tc.status != "0") {
				t.Fatalf("the run's error %v (%s), want one only when the reset fails", err, out)
			}
			calls, _ := os.ReadFile(record)
			if want := fmt.Sprintf(tc.want, filepath.Join(scratch, ResetFailedJoinsPlaybookFile)); string(calls) != want {
				t.Errorf("the run called\n%s\nwant\n%s", calls, want)
			}
			if playbook, _ := os.ReadFile(record + ".playbook"); string(playbook) != ResetFailedJoinsPlaybook {
				t.Errorf("the reset ran the playbook\n%s\nwant\n%s", playbook, ResetFailedJoinsPlaybook)
			}
		})
	}
}
