package kubespraydownloads

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// List runs Playbook from kubespray's tree with the rendered
// inventory and extra variables, as list-kubespray-downloads runs it in the kubespray image,
// and returns every node's downloads together. ansible-playbook is the machine's (Debian's
// ansible-core 2.14 evaluates kubespray v2.30.0's and v2.31.0's lists).
func List(ctx context.Context, kubesprayDir string, inventory, extraVars []byte) ([]Download, error) {
	if _, err := os.Stat(filepath.Join(kubesprayDir, "roles", "kubespray_defaults")); err != nil {
		return nil, fmt.Errorf("%s is not a kubespray tree (no roles/kubespray_defaults)", kubesprayDir)
	}
	dir, err := os.MkdirTemp("", "bpa-downloads-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	files := map[string][]byte{"hosts.ini": inventory, "extra-vars.json": extraVars, "downloads.yml": Playbook}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	args := []string{"--inventory=" + filepath.Join(dir, "hosts.ini"), "--extra-vars=@" + filepath.Join(dir, "extra-vars.json"),
		"--extra-vars=" + DirVar + "=" + dir, filepath.Join(dir, "downloads.yml")}
	// The program is fixed and the arguments are paths this function made: nothing reaches a shell.
	cmd := exec.CommandContext(ctx, "ansible-playbook", args...) //nolint:gosec // see above
	cmd.Dir = kubesprayDir                                       // its ansible.cfg: roles_path, and what else its roles expect
	cmd.Env = append(os.Environ(), "ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "ansible-tmp"), "ANSIBLE_FORCE_COLOR=False")
	out, err := cmd.CombinedOutput()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return nil, fmt.Errorf("kubespray's download list (ansible-playbook in %s): %w:\n%s", kubesprayDir, err, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	raw, err := os.ReadFile(filepath.Join(dir, File)) //nolint:gosec // G304: the temporary folder this function made
	if err != nil {
		return nil, err
	}
	byNode, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	return All(byNode), nil
}
