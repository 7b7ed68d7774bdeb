//go:build e2e

package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testctr"
)

// TestKubesprayImage runs the real kubespray's image the tests build from ../shared/third_party
// (hack/kubespray-image.sh, one per kubespray release; make e2e sets BPA_KUBESPRAY_IMAGES) in real containers, as the
// run-kubespray step runs an image: as nobody (65534), on a read-only root filesystem, with only
// /tmp writable, in /kubespray. kubespray's own version check (playbooks/ansible_version.yml:
// the ansible-core range it accepts, netaddr, jinja) passes, its cluster.yml, scale.yml and
// remove-node.yml pass ansible-playbook's syntax check with every role and collection they
// use, and its inventory sample parses.
func TestKubesprayImage(t *testing.T) {
	archives := strings.Fields(os.Getenv("BPA_KUBESPRAY_IMAGES"))
	if len(archives) == 0 {
		t.Skip("kubespray's images are not built: ../shared/third_party (kubespray, ansible-core) is absent; hack/kubespray-image.sh builds them when it is there")
	}
	if os.Geteuid() != 0 {
		t.Fatal("containers need root")
	}
	for _, archive := range archives {
		t.Run(filepath.Base(archive), func(t *testing.T) { checkKubesprayImage(t, archive) })
	}
}

func checkKubesprayImage(t *testing.T, archive string) {
	dir, err := os.MkdirTemp("/var/tmp", "bpa-kubespray-")
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctrd := testctr.Start(t, dir)
	ref := ctrd.Import(t, archive, "/kubespray:")
	scratch := filepath.Join(dir, "tmp")
	must(t, os.MkdirAll(scratch, 0o777))
	must(t, os.Chown(scratch, 65534, 65534))
	kubespray := func(args ...string) string {
		t.Helper()
		// ctr runs as root: setpriv (util-linux, in every Debian) drops to nobody, as the
		// step's securityContext does.
		args = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, args...)
		out, err := ctrd.Run(ref, []string{"--read-only", "--cwd", "/kubespray",
			"--env", "HOME=/tmp", "--env", "ANSIBLE_LOCAL_TEMP=/tmp/.ansible/tmp", "--env", "ANSIBLE_FORCE_COLOR=False",
			"--mount", "type=bind,src=" + scratch + ",dst=/tmp,options=rbind:rw"}, args...)
		if err != nil {
			t.Fatalf("%s in %s: %v\n%s", strings.Join(args, " "), ref, err, tail(out, 40))
		}
		return out
	}
	version := kubespray("ansible-playbook", "--version")
	say(t, "kubespray image %s: %s", ref, strings.SplitN(version, "\n", 2)[0])
	// Its plays run on every host: here on the container itself.
	out := kubespray("ansible-playbook", "--inventory=localhost,", "--connection=local", "playbooks/ansible_version.yml")
	if !strings.Contains(out, "ok=") || !strings.Contains(out, "failed=0") {
		t.Fatalf("kubespray's version check:\n%s", tail(out, 30))
	}
	recap := ""
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "ok=") {
			recap = strings.Join(strings.Fields(line), " ")
		}
	}
	say(t, "kubespray's own version check (ansible-core, netaddr, jinja) passes: %s", recap)
	for _, book := range []string{"cluster.yml", "scale.yml", "remove-node.yml"} {
		if out := kubespray("ansible-playbook", "--inventory=inventory/sample/inventory.ini", "--syntax-check", book); !strings.Contains(out, "playbook: "+book) {
			t.Errorf("ansible-playbook --syntax-check %s:\n%s", book, tail(out, 20))
		}
	}
	say(t, "cluster.yml, scale.yml and remove-node.yml pass ansible-playbook's syntax check")
}
