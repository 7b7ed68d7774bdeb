package renderinventory

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// TestExtraVarsReachAnsibleTyped: the CR's extra variables reach ansible-playbook with their
// JSON types, through the extra-vars file run-kubespray passes: a playbook asserts a boolean is
// a boolean (kubespray tests `kube_proxy_strict_arp | bool`, but `when: x` on the string
// "false" is true), a number a number, a list a list of maps, and a string that looks like a
// number stays a string. The real ansible-playbook reads the file.
func TestExtraVarsReachAnsibleTyped(t *testing.T) {
	playbook, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Fatalf("ansible-playbook is missing: run `make test-deps` (Debian ansible-core)")
	}
	_, extraVars, err := Render(provisioning(map[string]bpav1.ExtraVarValue{
		"kube_proxy_strict_arp": bpav1.ExtraVar(false),
		"dns_min_replicas":      bpav1.ExtraVar(2),
		"kube_version_label":    bpav1.ExtraVar("1.33"),
		"containerd_registries_mirrors": bpav1.ExtraVar([]map[string]any{
			{"prefix": "docker.io", "mirrors": []map[string]any{{"host": "http://10.0.0.1:5000", "capabilities": []string{"pull", "resolve"}, "skip_verify": false}}},
		}),
	}), hosts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	vars := write("extra-vars.json", string(extraVars))
	book := write("types.yml", `- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.assert:
        that:
          - kube_proxy_strict_arp is boolean
          - not kube_proxy_strict_arp
          - dns_min_replicas is number
          - dns_min_replicas == 2
          - kube_version_label is string
          - kube_pods_subnet == "10.244.64.0/18"
          - containerd_registries_mirrors is sequence
          - containerd_registries_mirrors[0].mirrors[0].capabilities == ["pull", "resolve"]
          - containerd_registries_mirrors[0].mirrors[0].skip_verify is boolean
`)
	cmd := exec.Command(playbook, "--inventory=localhost,", "--connection=local", "--extra-vars=@"+vars, book)
	cmd.Env = append(os.Environ(), "ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "tmp"), "HOME="+dir, "ANSIBLE_NOCOLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "failed=0") {
		t.Fatalf("ansible-playbook with the rendered extra variables: %v\n%s\nextra-vars.json:\n%s", err, out, extraVars)
	}
}
