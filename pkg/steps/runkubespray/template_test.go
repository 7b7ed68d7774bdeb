package runkubespray

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestScaleRunsFactsFirst runs a scale run's compiled command with an ansible-playbook that
// records its arguments: facts.yml over every node, then scale.yml limited to the new ones,
// each with the same arguments; a failed facts.yml stops the run with its exit status.
func TestScaleRunsFactsFirst(t *testing.T) {
	command, args, err := Plan{Mode: ModeScale, Nodes: []string{"worker-3", "worker-4"}}.Command()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	record := filepath.Join(t.TempDir(), "calls")
	fake := "#!/bin/sh\necho \"$*\" >> " + record + "\ncase \"$*\" in *facts.yml) exit ${FACTS_EXIT:-0};; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "ansible-playbook"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(factsExit string) (string, int) {
		_ = os.Remove(record)
		cmd := exec.Command(command[0], append(command[1:], args...)...)
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "FACTS_EXIT=" + factsExit}
		out, err := cmd.CombinedOutput()
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		calls, _ := os.ReadFile(record)
		return string(calls), code
	}

	calls, code := run("0")
	common := "--inventory=/inputs/hosts.ini --private-key=/etc/bpa/ssh/id --become --extra-vars=@/inputs/extra-vars.json --extra-vars=credentials_dir=/tmp/credentials"
	want := common + " playbooks/facts.yml\n" + common + " --limit=worker-3,worker-4 scale.yml\n"
	if code != 0 || calls != want {
		t.Errorf("a scale run called (exit %d):\n%s\nwant:\n%s", code, calls, want)
	}
	calls, code = run("4")
	if code != 4 || strings.Contains(calls, "scale.yml") {
		t.Errorf("facts.yml failing with 4: exit %d, calls:\n%s", code, calls)
	}
}

// TestUpgradeWaveRunsFactsFirst: one wave of an upgrade, as its pod runs it once Argo has put
// the wave's limit in: facts.yml over every node, then upgrade-cluster.yml limited to the wave,
// its workers at once; a failed facts.yml stops it.
func TestUpgradeWaveRunsFactsFirst(t *testing.T) {
	command, args, err := Plan{Mode: ModeUpgrade, KubernetesVersion: "1.34.3", Waves: [][]string{{"worker-1", "worker-2"}}}.Command()
	if err != nil {
		t.Fatal(err)
	}
	if args[1] != "{{inputs.parameters."+LimitParam+"}}" {
		t.Fatalf("the limit is %q, want the task's parameter", args[1])
	}
	args[1] = "worker-1,worker-2"
	bin := t.TempDir()
	record := filepath.Join(t.TempDir(), "calls")
	fake := "#!/bin/sh\necho \"$*\" >> " + record + "\ncase \"$*\" in *facts.yml) exit ${FACTS_EXIT:-0};; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "ansible-playbook"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, factsExit := range []string{"0", "3"} {
		_ = os.Remove(record)
		cmd := exec.Command(command[0], append(command[1:], args...)...)
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "FACTS_EXIT=" + factsExit}
		out, err := cmd.CombinedOutput()
		calls, _ := os.ReadFile(record)
		common := "--inventory=/inputs/hosts.ini --private-key=/etc/bpa/ssh/id --become --extra-vars=@/inputs/extra-vars.json --extra-vars=credentials_dir=/tmp/credentials --extra-vars=serial=100%"
		want := common + " playbooks/facts.yml\n" + common + " --limit=worker-1,worker-2 upgrade-cluster.yml\n"
		if factsExit != "0" {
			want = common + " playbooks/facts.yml\n"
			if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 3 {
				t.Errorf("facts.yml failing with 3: %v %s", err, out)
			}
		} else if err != nil {
			t.Errorf("%v: %s", err, out)
		}
		if string(calls) != want {
			t.Errorf("facts.yml exit %s: the wave called\n%s\nwant\n%s", factsExit, calls, want)
		}
	}
}

// TestCommands are the other modes' command lines, and the plans refused.
func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		plan    Plan
		last    string
		wantErr string
	}{
		{plan: Plan{Mode: ModeCreate}, last: "cluster.yml"},
		{plan: Plan{Mode: ModeRemove, Nodes: []string{"worker-1"}}, last: "--extra-vars=node=worker-1 --extra-vars=skip_confirmation=true --extra-vars=@/inputs/removal-vars.json remove-node.yml"},
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
		command, args, err := tc.plan.Command()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%+v: %v, want %q", tc.plan, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(command) != 1 || command[0] != "ansible-playbook" || !strings.HasSuffix(strings.Join(args, " "), tc.last) {
			t.Errorf("%+v: %v %v %v, want ansible-playbook ... %s", tc.plan, command, args, err, tc.last)
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
	want := "--inventory=/inputs/hosts.ini --private-key=/etc/bpa/ssh/id --become --extra-vars=@/inputs/extra-vars.json --extra-vars=credentials_dir=/tmp/credentials --limit=kube_control_plane:etcd " +
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
