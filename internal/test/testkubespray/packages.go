package testkubespray

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
)

// systemPackagesQuery asks kubespray's own system_packages role, on each node, which packages
// it would install there: its variables (roles/system_packages/vars) evaluated with
// kubespray_defaults and the facts the role gathers, exactly as its "Manage packages" task
// selects them. The suites build the site's package mirror from the answer, not from a list
// of their own.
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

var packagesAnswer = regexp.MustCompile(`"msg": ("BPA-PACKAGES .*")`)

// Packages runs systemPackagesQuery with the real kubespray on the machines of in's inventory
// and returns the packages, every node's together.
func Packages(t *testing.T, p *bpav1.Provisioning, in Inputs) []string {
	t.Helper()
	out := Run(t, p, in, Playbook{
		Path:  "bpa-system-packages.yml",
		Files: map[string][]byte{"/kubespray/bpa-system-packages.yml": []byte(systemPackagesQuery)},
	})
	names, err := parsePackages(out)
	if err != nil {
		t.Fatalf("kubespray's system_packages query: %v\n%s", err, LastLines(out, 30))
	}
	return names
}

// parsePackages reads systemPackagesQuery's answers out of ansible-playbook's output.
func parsePackages(out string) ([]string, error) {
	seen := map[string]bool{}
	for _, m := range packagesAnswer.FindAllStringSubmatch(out, -1) {
		var msg string
		var names []string
		if err := json.Unmarshal([]byte(m[1]), &msg); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(msg, "BPA-PACKAGES ")), &names); err != nil {
			return nil, err
		}
		for _, n := range names {
			seen[n] = true
		}
	}
	if len(seen) == 0 {
		return nil, errNoAnswer
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

var errNoAnswer = errors.New("no node answered")

// PackageMirror builds a Debian package repository holding names and whatever they need that
// a node whose dpkg status is status lacks, from this machine's Debian sources (the same
// release as the servers' image): a site's package mirror, as small as the servers need. It
// returns the repository's folder, for "deb [trusted=yes] URL ./".
func PackageMirror(t *testing.T, names []string, status []byte) string {
	t.Helper()
	dir := testinterrupt.TempDir(t)
	archives := filepath.Join(dir, "repo")
	for _, d := range []string{filepath.Join(archives, "partial"), filepath.Join(dir, "lists", "partial")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(dir, "status"), status, 0o644))
	apt := func(args ...string) {
		t.Helper()
		cmd := exec.Command("apt-get", append([]string{"-q", "-o", "Dir::State::status=" + filepath.Join(dir, "status"),
			"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"), "-o", "Dir::Cache::archives=" + archives,
			"-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("apt-get %s: %v\n%s", strings.Join(args, " "), err, LastLines(string(out), 20))
		}
	}
	apt("update")
	apt(append([]string{"install", "--download-only", "--no-install-recommends", "-y"}, names...)...)
	_ = os.RemoveAll(filepath.Join(archives, "partial"))
	_ = os.Remove(filepath.Join(archives, "lock"))
	// Release describes Packages: it is written after it.
	for _, index := range []string{"Packages", "Release"} {
		cmd := exec.Command("apt-ftparchive", strings.ToLower(index), ".")
		cmd.Dir = archives
		out, err := cmd.Output()
		must(t, err)
		must(t, os.WriteFile(filepath.Join(archives, index), out, 0o644))
	}
	debs, _ := filepath.Glob(filepath.Join(archives, "*.deb"))
	t.Logf("the site's package mirror for kubespray: %d packages for the %d asked (%s)", len(debs), len(names), strings.Join(names, " "))
	return archives
}
