package testkubespray

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testcluster"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testctr"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// Images are the archives of the kubespray images hack/kubespray-image.sh built
// (BPA_KUBESPRAY_IMAGES), one per release; none when ../shared/third_party is absent.
func Images() []string { return strings.Fields(os.Getenv("BPA_KUBESPRAY_IMAGES")) }

// TestClusterBuild is the archive of the kubespray image of the test cluster's release
// (testcluster.KubesprayVersion) and the build of everything it downloads for that cluster
// (hack/kubespray-downloads.sh's folder, BPA_KUBESPRAY_DOWNLOADS); it skips t, saying why,
// when either is not built.
func TestClusterBuild(t *testing.T) (archive, downloads string) {
	t.Helper()
	for _, a := range Images() {
		if strings.Contains(filepath.Base(a), "-"+testcluster.KubesprayVersion+"-") {
			archive = a
		}
	}
	downloads = os.Getenv("BPA_KUBESPRAY_DOWNLOADS")
	if archive == "" || downloads == "" {
		t.Skip("kubespray's downloads or its " + testcluster.KubesprayVersion + " image are not built: ../shared/third_party is absent " +
			"(hack/kubespray-downloads.sh and hack/kubespray-image.sh build them when it is there)")
	}
	return archive, downloads
}

// Inputs are what a run-kubespray pod is given: the rendered inventory and extra variables,
// the pinned host keys (known_hosts, as the cluster's known-hosts Secret holds them) and the
// site's SSH private key (PEM).
type Inputs struct {
	Inventory, ExtraVars []byte
	KnownHosts           []byte
	Key                  []byte
}

// Playbook is what Run runs: a playbook (a path in kubespray's tree) with the options before
// it, or a scale or remove Plan as its step runs it with the options after its arguments; and
// files to add to the container (path → content). MayFail returns a failed run's output
// instead of failing the test. Outputs are files the run writes under the pod's /tmp (path →
// where to put their content), as Argo reads its output parameters. Took, when set, is given
// how long the container ran (not the runtime's start nor the image's import).
type Playbook struct {
	Path    string
	Plan    *runkubespray.Plan
	Options []string
	Files   map[string][]byte
	Outputs map[string]*[]byte
	MayFail bool
	Took    *time.Duration
}

func (pb Playbook) String() string {
	if pb.Plan != nil {
		return pb.Plan.String()
	}
	return pb.Path
}

// Run runs the real kubespray's playbook on the machines, from the first of Images, exactly as
// the compiled run-kubespray step runs it for p: its command line (the playbook aside) and
// environment, in at the pod's paths, and the playbook's own files where it asks, as nobody on
// a read-only root filesystem with only /tmp writable. The network is the test's, which
// reaches the site. It returns ansible-playbook's output.
func Run(t testing.TB, p *bpav1.Provisioning, in Inputs, pb Playbook) string {
	t.Helper()
	archives := Images()
	if len(archives) == 0 {
		t.Fatal("kubespray's image is not built: ../shared/third_party is absent (hack/kubespray-image.sh builds it when it is there)")
	}
	dir := testinterrupt.ScratchDir(t, "bpa-kubespray-")
	mounts := map[string][]byte{ // where the pod has it → the content
		filepath.Join(steps.InputsDir, "hosts.ini"):       in.Inventory,
		filepath.Join(steps.InputsDir, "extra-vars.json"): in.ExtraVars,
		steps.KnownHostsPath:                              in.KnownHosts,
		steps.SSHKeyPath:                                  in.Key,
	}
	for podPath, data := range pb.Files {
		mounts[podPath] = data
	}
	tmpl := testenv.Compiled(t, p).GetTemplateByName("run-kubespray")
	compiled := tmpl.Container
	// A playbook by path: ansible-playbook with the arguments the step's cluster.yml script
	// passes on (those after its own name, $0).
	if len(compiled.Command) != 3 || compiled.Command[2] != runkubespray.ClusterScript || len(compiled.Args) == 0 || compiled.Args[0] != runkubespray.Name {
		t.Fatalf("%s compiles to no plain cluster.yml run: %q %q", p.Name, compiled.Command, compiled.Args)
	}
	command := []string{"ansible-playbook"}
	args := append(append(slices.Clone(compiled.Args[1:]), pb.Options...), pb.Path)
	if pb.Plan != nil {
		// A scale or remove run, as the compiler emits its step for that plan.
		planned, err := runkubespray.Template(compiled.Image, *pb.Plan)
		must(t, err)
		tmpl = &planned
		compiled = tmpl.Container
		command = compiled.Command
		args = append(append([]string{}, compiled.Args...), pb.Options...)
	}
	// The step's constant files (its raw artifacts without parameters), where Argo puts them.
	for _, a := range tmpl.Inputs.Artifacts {
		if a.Raw != nil && !strings.Contains(a.Raw.Data, "{{") {
			mounts[a.Path] = []byte(a.Raw.Data)
		}
	}
	var ctrOptions []string
	for podPath, data := range mounts {
		file := filepath.Join(dir, "files", podPath)
		must(t, os.MkdirAll(filepath.Dir(file), 0o755))
		must(t, os.WriteFile(file, data, 0o400))
		must(t, os.Chown(file, 65534, 65534))
		ctrOptions = append(ctrOptions, "--mount", "type=bind,src="+file+",dst="+podPath+",options=rbind:ro")
	}
	scratch := filepath.Join(dir, "tmp")
	must(t, os.MkdirAll(scratch, 0o700))
	must(t, os.Chown(scratch, 65534, 65534))
	ctrOptions = append(ctrOptions, "--mount", "type=bind,src="+scratch+",dst="+steps.TmpDir+",options=rbind:rw",
		"--read-only", "--net-host", "--cwd", "/kubespray")
	for _, e := range compiled.Env {
		ctrOptions = append(ctrOptions, "--env", e.Name+"="+e.Value)
	}

	ctrd := testctr.Start(t, dir)
	image := ctrd.Import(t, archives[0], "/kubespray:")
	// ctr runs as root: setpriv drops to nobody, as the step's securityContext does.
	command = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, append(command, args...)...)
	start := time.Now()
	out, err := ctrd.RunTee(image, ctrOptions, followLog(t, pb.String()), command...)
	if pb.Took != nil {
		*pb.Took = time.Since(start)
	}
	if err != nil && !pb.MayFail {
		t.Fatalf("the real kubespray (%s) %s on the machines: %v\n%s", image, pb, err, LastLines(out, 60))
	}
	t.Logf("the real kubespray (%s) ran %s on the machines in %.0f s (failed: %v): %s", image, pb, time.Since(start).Seconds(), err != nil, Recap(out))
	if reports, perr := CheckProgress(out, err == nil); perr != nil {
		t.Errorf("run-kubespray's progress plugin on the real kubespray's %s: %v", pb, perr)
	} else {
		t.Logf("run-kubespray's progress: %d reports, the last %s", len(reports), reports[len(reports)-1].Summary())
	}
	for podPath, into := range pb.Outputs {
		rel, err := filepath.Rel(steps.TmpDir, podPath)
		if err != nil || strings.HasPrefix(rel, "..") {
			t.Fatalf("output %s is not under the pod's %s", podPath, steps.TmpDir)
		}
		*into, err = os.ReadFile(filepath.Join(scratch, rel))
		must(t, err)
	}
	return out
}

// followLog is where a run's output is copied as it comes, to be followed while it goes: the
// file BPA_KUBESPRAY_LOG names (appended to, each run under a header), or nowhere.
func followLog(t testing.TB, what string) io.Writer {
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

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// KubesprayFile is the file at path in kubespray's tree ("roles/..."), as the image archive
// holds it: read from the root filesystem hack/kubespray-image.sh made the archive of, which
// it keeps beside it (NAME.tar for NAME.image.tar).
func KubesprayFile(t *testing.T, archive, path string) []byte {
	t.Helper()
	b, err := testutil.FileInArchive(strings.TrimSuffix(archive, ".image.tar")+".tar", path)
	must(t, err)
	return b
}
