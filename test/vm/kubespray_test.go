//go:build vm

package vm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testctr"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// runRealKubespray runs the real kubespray's playbook (a path in its tree) on the machines, from
// the first of the images hack/kubespray-image.sh built (BPA_KUBESPRAY_IMAGES), exactly as the
// compiled run-kubespray step runs it: its command line (the playbook aside) and environment,
// the rendered inventory and extra variables, the SSH key and the pinned known_hosts at the
// pod's paths, and run's own files (a playbook of the suite's, say) where it asks, as nobody on a read-only root filesystem with only /tmp writable; the network
// is the test's, which reaches the site. Without the image it says so and does nothing.
func runRealKubespray(t *testing.T, env *testenv.Env, ns string, p *bpav1.Provisioning, inventory, extraVars []byte, keyFile string, run kubesprayRun) string {
	t.Helper()
	archives := strings.Fields(os.Getenv("BPA_KUBESPRAY_IMAGES"))
	if len(archives) == 0 {
		t.Fatal("kubespray's image is not built") // kubesprayPackages checks first
	}
	sec := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: p.Labels[bpav1.ClusterLabel] + "-known-hosts"}, sec); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "bpa-kubespray-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	mounts := map[string][]byte{ // where the pod has it → the content
		filepath.Join(steps.InputsDir, "hosts.ini"):       inventory,
		filepath.Join(steps.InputsDir, "extra-vars.json"): extraVars,
		steps.KnownHostsPath:                              sec.Data[steps.KnownHostsKey],
		steps.SSHKeyPath:                                  key,
	}
	for podPath, data := range run.Files {
		mounts[podPath] = data
	}
	var ctrOptions []string
	for podPath, data := range mounts {
		file := filepath.Join(dir, "files", podPath)
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(file, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		ctrOptions = append(ctrOptions, "--mount", "type=bind,src="+file+",dst="+podPath+",options=rbind:ro")
	}
	scratch := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(scratch, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ctrOptions = append(ctrOptions, "--mount", "type=bind,src="+scratch+",dst="+steps.TmpDir+",options=rbind:rw",
		"--read-only", "--net-host", "--cwd", "/kubespray")
	compiled := testenv.Compiled(t, p).GetTemplateByName("run-kubespray").Container
	command := append([]string{}, compiled.Command...)
	args := append([]string{}, compiled.Args[:len(compiled.Args)-1]...)
	args = append(append(args, run.Options...), run.Playbook)
	if run.Plan != nil {
		// A scale or remove run, as the compiler emits its step for that plan.
		tmpl, err := runkubespray.Template(compiled.Image, *run.Plan)
		if err != nil {
			t.Fatal(err)
		}
		compiled = tmpl.Container
		command = compiled.Command
		args = append(append([]string{}, compiled.Args...), run.Options...)
	}
	for _, e := range compiled.Env {
		ctrOptions = append(ctrOptions, "--env", e.Name+"="+e.Value)
	}

	ctrd := testctr.Start(t, dir)
	image := ctrd.Import(t, archives[0], "/kubespray:")
	// ctr runs as root: setpriv drops to nobody, as the step's securityContext does.
	command = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, append(command, args...)...)
	what := run.Playbook
	if run.Plan != nil {
		what = run.Plan.String()
	}
	start := time.Now()
	out, err := ctrd.RunTee(image, ctrOptions, followLog(t, what), command...)
	if err != nil && !run.MayFail {
		t.Fatalf("the real kubespray (%s) %s on the machines: %v\n%s", image, what, err, lastLinesOf(out, 60))
	}
	t.Logf("the real kubespray (%s) ran %s on the machines in %.0f s (failed: %v): %s", image, what, time.Since(start).Seconds(), err != nil, recapOf(out))
	return out
}

// kubesprayRun is what runRealKubespray runs: a playbook (a path in kubespray's tree) with the
// options before it, or a scale or remove Plan as its step runs it with the options after its
// arguments; and files to add to the container (path → content). MayFail returns a failed
// run's output instead of failing the test.
type kubesprayRun struct {
	Playbook string
	Plan     *runkubespray.Plan
	Options  []string
	Files    map[string][]byte
	MayFail  bool
}

// followLog is where a run's output is copied as it comes, to be followed while it goes: the
// file BPA_KUBESPRAY_LOG names (appended to, each run under a header), or nowhere.
func followLog(t *testing.T, what string) io.Writer {
	name := os.Getenv("BPA_KUBESPRAY_LOG")
	if name == "" {
		return nil
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("BPA_KUBESPRAY_LOG: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	fmt.Fprintf(f, "\n===== %s: %s, %s\n", t.Name(), what, time.Now().Format(time.RFC3339))
	return f
}

func lastLinesOf(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// recapOf is ansible-playbook's PLAY RECAP, one line per host.
func recapOf(out string) string {
	var hosts []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, " ok=") && strings.Contains(line, "failed=") {
			hosts = append(hosts, strings.Join(strings.Fields(line), " "))
		}
	}
	return strings.Join(hosts, "; ")
}

// systemPackagesQuery asks kubespray's own system_packages role, on each node, which packages
// it would install there: its variables (roles/system_packages/vars) evaluated with
// kubespray_defaults and the facts the role gathers, exactly as its "Manage packages" task
// selects them. The suite builds the site's package mirror from the answer, not from a list
// of its own.
const systemPackagesQuery = `- name: Which packages kubespray's system_packages installs (the suite's site mirror)
  hosts: k8s_cluster:etcd
  gather_facts: false
  roles:
    - kubespray_defaults
  tasks:
    - name: The facts system_packages gathers
      ansible.builtin.setup:
        gather_subset: [distribution, pkg_mgr]
    - name: system_packages' variables
      ansible.builtin.include_vars: "{{ playbook_dir }}/roles/system_packages/vars/main.yml"
    - name: The packages its Manage packages task installs
      ansible.builtin.debug:
        msg: "BPA-PACKAGES {{ pkgs | dict2items | selectattr('value', 'ansible.builtin.all') | map(attribute='key') | list | to_json }}"
`

// kubesprayPackages runs systemPackagesQuery with the real kubespray and returns the packages,
// every node's together.
// Without kubespray's image (../shared/third_party absent) it says so and returns nil.
func kubesprayPackages(t *testing.T, env *testenv.Env, ns string, p *bpav1.Provisioning, inventory, extraVars []byte, keyFile string) []string {
	t.Helper()
	if len(strings.Fields(os.Getenv("BPA_KUBESPRAY_IMAGES"))) == 0 {
		t.Log("the real kubespray is not run: its image is not built (../shared/third_party is absent; make vms builds it when it is there)")
		return nil
	}
	out := runRealKubespray(t, env, ns, p, inventory, extraVars, keyFile, kubesprayRun{
		Playbook: "bpa-system-packages.yml",
		Files:    map[string][]byte{"/kubespray/bpa-system-packages.yml": []byte(systemPackagesQuery)},
	})
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`"msg": ("BPA-PACKAGES .*")`).FindAllStringSubmatch(out, -1) {
		var msg string
		var names []string
		if err := json.Unmarshal([]byte(m[1]), &msg); err != nil {
			t.Fatalf("the query's answer %s: %v", m[1], err)
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(msg, "BPA-PACKAGES ")), &names); err != nil {
			t.Fatalf("the query's answer %q: %v", msg, err)
		}
		for _, n := range names {
			seen[n] = true
		}
	}
	if len(seen) == 0 {
		t.Fatalf("kubespray's system_packages query answered nothing:\n%s", lastLinesOf(out, 30))
	}
	return slices.Sorted(maps.Keys(seen))
}

// packageMirror builds a Debian package repository holding names and whatever they need that
// a node whose dpkg status is status lacks, from this machine's Debian sources (the same
// release as the servers' image): a site's package mirror, as small as the servers need.
func packageMirror(t *testing.T, names []string, status []byte) string {
	t.Helper()
	dir := t.TempDir()
	archives := filepath.Join(dir, "repo")
	for _, d := range []string{filepath.Join(archives, "partial"), filepath.Join(dir, "lists", "partial")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "status"), status, 0o644); err != nil {
		t.Fatal(err)
	}
	apt := func(args ...string) {
		t.Helper()
		cmd := exec.Command("apt-get", append([]string{"-q", "-o", "Dir::State::status=" + filepath.Join(dir, "status"),
			"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"), "-o", "Dir::Cache::archives=" + archives,
			"-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("apt-get %s: %v\n%s", strings.Join(args, " "), err, lastLinesOf(string(out), 20))
		}
	}
	apt("update")
	apt(append([]string{"install", "--download-only", "--no-install-recommends", "-y"}, names...)...)
	_ = os.RemoveAll(filepath.Join(archives, "partial"))
	_ = os.Remove(filepath.Join(archives, "lock"))
	for file, args := range map[string][]string{"Packages": {"packages", "."}} {
		cmd := exec.Command("apt-ftparchive", args...)
		cmd.Dir = archives
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(archives, file), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("apt-ftparchive", "release", ".")
	cmd.Dir = archives
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(archives, "Release"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	debs, _ := filepath.Glob(filepath.Join(archives, "*.deb"))
	t.Logf("the site's package mirror for kubespray: %d packages for %d it installs (%s)", len(debs), len(names), strings.Join(names, " "))
	return archives
}
