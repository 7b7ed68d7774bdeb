package compile_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/argovalidate"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/golden"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubespraydownloads"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
	"github.com/akraino-edge-stack/bpa-workflow-controller/workflows"
)

func options(t testing.TB) compile.Options {
	t.Helper()
	plugins, err := workflows.Plugins()
	if err != nil {
		t.Fatal(err)
	}
	return compile.DefaultOptions(plugins)
}

func marshal(t testing.TB, wf *wfv1.Workflow) []byte {
	t.Helper()
	out, err := yaml.Marshal(wf)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func compileDoc(t testing.TB, obj any, opts compile.Options) (*wfv1.Workflow, error) {
	t.Helper()
	switch cr := obj.(type) {
	case *bpav1.Provisioning:
		return compile.Provisioning(cr, opts)
	case *bpav1.Software:
		return compile.Software(cr, opts)
	}
	t.Fatalf("not a compilable CR: %T", obj)
	return nil, nil
}

// TestCompileFixtures compiles every CR of the shared fixtures, compares each Workflow with
// its golden file, and runs Argo's validator on it.
func TestCompileFixtures(t *testing.T) {
	for _, name := range append(testutil.ProvisioningFixtures, "software-cluster-xyz.yaml") {
		t.Run(name, func(t *testing.T) {
			docs, err := manifest.ReadFile(testutil.Fixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			wf, err := compileDoc(t, docs[0].Object, options(t))
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, strings.TrimSuffix(name, ".yaml")+".workflow.yaml", marshal(t, wf))
			if err := argovalidate.Workflow(wf); err != nil {
				t.Fatalf("Argo's validator refuses the Workflow: %v", err)
			}
		})
	}
}

// TestCompileVariants covers the options a site or day 2 sets: a lease file, an owner, and
// the kubespray modes.
func TestCompileVariants(t *testing.T) {
	p := testutil.Provisioning(t, "provisioning-cluster-abc.yaml")
	p.UID = "4b1d4c1e-0000-4000-8000-00000000abcd"
	p.Generation = 3
	for _, tc := range []struct {
		name   string
		mutate func(*compile.Options)
	}{
		{"dnsmasq-lease-file", func(o *compile.Options) {
			o.LeaseFile = "/var/lib/misc/dnsmasq.leases"
			o.LeaseFormat = leases.FormatDnsmasq
		}},
		{"scale", func(o *compile.Options) {
			o.Kubespray = runkubespray.Plan{Mode: runkubespray.ModeScale, Nodes: []string{"worker-3"}}
		}},
		{"remove", func(o *compile.Options) {
			o.Kubespray = runkubespray.Plan{Mode: runkubespray.ModeRemove, Nodes: []string{"worker-1", "worker-2"}}
		}},
		{"version", func(o *compile.Options) {
			o.Kubespray = runkubespray.Plan{Mode: runkubespray.ModeCreate, KubernetesVersion: "1.33.7"}
		}},
		{"upgrade", func(o *compile.Options) {
			o.Kubespray = runkubespray.Plan{Mode: runkubespray.ModeUpgrade, KubernetesVersion: "1.34.3", Waves: [][]string{{"worker-1"}, {"worker-2"}}}
		}},
		{"upgrade-approved", func(o *compile.Options) {
			o.Kubespray = runkubespray.Plan{Mode: runkubespray.ModeUpgrade, KubernetesVersion: "1.34.3", Approval: true, Waves: [][]string{{"worker-1"}, {"worker-2"}}}
		}},
		{"masters-added", func(o *compile.Options) {
			// etcd grows from one member to three: checked before, a half-done join of the
			// masters joining reset and cluster.yml, the control plane's etcd endpoints
			// rewritten, checked after.
			o.Kubespray = runkubespray.Plan{Mode: runkubespray.ModeCreate, KubernetesVersion: "1.34.3",
				ControlPlane: []string{"master", "master-2", "master-3"}, Etcd: []string{"master", "master-2", "master-3"},
				EtcdChange:         &runkubespray.EtcdChange{Before: []string{"master"}, After: []string{"master", "master-2", "master-3"}},
				UpdateControlPlane: true, Joining: []string{"master-2", "master-3"}}
		}},
		{"renew-certificates", func(o *compile.Options) {
			o.Kubespray = runkubespray.Plan{Mode: runkubespray.ModeRenewCertificates, KubernetesVersion: "1.34.3"}
		}},
		{"master-removed", func(o *compile.Options) {
			o.Kubespray = runkubespray.Plan{Mode: runkubespray.ModeRemove, Nodes: []string{"master-2"}, KubernetesVersion: "1.34.3",
				ControlPlane: []string{"master", "master-2"}, Etcd: []string{"master"},
				EtcdChange: &runkubespray.EtcdChange{Before: []string{"master"}, After: []string{"master"}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := options(t)
			tc.mutate(&opts)
			wf, err := compile.Provisioning(p, opts)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "variant-"+tc.name+".workflow.yaml", marshal(t, wf))
			if err := argovalidate.Workflow(wf); err != nil {
				t.Fatalf("Argo's validator refuses the Workflow: %v", err)
			}
		})
	}
}

// TestCompileOffline: offline mode hands render-inventory the mirror and each KUD plugin its
// manifest on the mirror; a Provisioning may also turn it off on an offline-by-default site.
func TestCompileOffline(t *testing.T) {
	p := testutil.Provisioning(t, "provisioning-cluster-efg-kud-plugins.yaml")
	opts := options(t)
	opts.Offline = true
	opts.OfflineMirror = "http://10.10.0.2:30880"
	opts.OfflineKUDManifests = "kud-plugins:2025.06"
	wf, err := compile.Provisioning(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "variant-offline.workflow.yaml", marshal(t, wf))
	if err := argovalidate.Workflow(wf); err != nil {
		t.Fatalf("Argo's validator refuses the Workflow: %v", err)
	}
	render := wf.GetTemplateByName("render-inventory").Container.Args
	wantOffline := []string{"--offline-mirror=http://10.10.0.2:30880", "--offline-kubespray-files=kubespray:v2.30.0"}
	if d := cmp.Diff(wantOffline, render[len(render)-len(wantOffline):]); d != "" {
		t.Errorf("render-inventory's last arguments (-want +got):\n%s", d)
	}
	var pluginManifest string
	for _, task := range wf.GetTemplateByName(compile.ProvisionEntrypoint).DAG.Tasks {
		if param := task.Arguments.GetParameterByName("manifest"); task.Name == "kud-plugin-onap4k8s" && param != nil {
			pluginManifest = param.Value.String()
		}
	}
	if want := "http://10.10.0.2:30880/files/kud-plugins/2025.06/onap4k8s.yaml"; pluginManifest != want {
		t.Errorf("the plugin's manifest is %q, want the mirror's %q", pluginManifest, want)
	}

	// Nothing touches a host before the mirror is checked; the check gets kubespray's own
	// download list, which the playbook (base64 through Argo's templating) writes.
	tasks := map[string]string{}
	for _, task := range wf.GetTemplateByName(compile.ProvisionEntrypoint).DAG.Tasks {
		tasks[task.Name] = task.Depends
	}
	want := map[string]string{
		"discover-hosts":           "",
		"resolve-leases":           "discover-hosts.Succeeded",
		"render-inventory":         "resolve-leases.Succeeded",
		"list-kubespray-downloads": "render-inventory.Succeeded",
		"check-site-mirror":        "list-kubespray-downloads.Succeeded",
		"pin-host-keys":            "check-site-mirror.Succeeded && resolve-leases.Succeeded",
		"run-kubespray":            "pin-host-keys.Succeeded && render-inventory.Succeeded",
		"fetch-kubeconfig":         "run-kubespray.Succeeded",
		"read-certificates":        "fetch-kubeconfig.Succeeded",
		"check-run-kubespray":      "fetch-kubeconfig.Succeeded",
		"kud-plugin-onap4k8s":      "fetch-kubeconfig.Succeeded",
	}
	if diff := cmp.Diff(want, tasks); diff != "" {
		t.Errorf("offline tasks' dependencies (-want +got):\n%s", diff)
	}
	list := wf.GetTemplateByName("list-kubespray-downloads")
	playbook, err := base64.StdEncoding.DecodeString(list.Inputs.Artifacts[2].Raw.Data)
	if err != nil || !bytes.Equal(playbook, kubespraydownloads.Playbook) || list.Container.Image != compile.DefaultKubesprayImage {
		t.Errorf("list-kubespray-downloads runs %s with a playbook of %d bytes (%v), want kubespray's image and the %d bytes of kubespraydownloads.Playbook",
			list.Container.Image, len(playbook), err, len(kubespraydownloads.Playbook))
	}

	p.Spec.Offline = ptr.To(false)
	online, err := compile.Provisioning(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if raw := string(marshal(t, online)); strings.Contains(raw, "offline") || strings.Contains(raw, "10.10.0.2") {
		t.Errorf("spec.offline=false still compiled offline:\n%s", raw)
	}
}

// TestCompileSoftwareWithBinaries: a Software naming binaries gets the site registry's
// address, its CA mounted and its account from the namespace's Secret (never a parameter).
func TestCompileSoftwareWithBinaries(t *testing.T) {
	docs, err := manifest.ReadFile(filepath.Join("testdata", "software-binaries.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sw := docs[0].Object.(*bpav1.Software)
	opts := options(t)
	opts.SiteRegistry = "10.10.0.2:30500/site"
	toolDigest := "sha256:" + strings.Repeat("ab", 32)
	opts.BinaryDigests = map[string]string{"worker:tool": toolDigest, "master:tool": toolDigest}
	wf, err := compile.Software(sw, opts)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "variant-software-binaries.workflow.yaml", marshal(t, wf))
	bad := opts
	bad.BinaryDigests = map[string]string{"master:tool": "sha256:abc"}
	if _, err := compile.Software(sw, bad); err == nil || !strings.Contains(err.Error(), "binary digest master:tool=sha256:abc") {
		t.Errorf("a malformed digest: %v", err)
	}
	if err := argovalidate.Workflow(wf); err != nil {
		t.Fatalf("Argo's validator refuses the Workflow: %v", err)
	}
	// The registry's arguments follow the step's own, and its account comes from the Secret.
	install := wf.GetTemplateByName("install-software").Container
	wantArgs := []string{"--registry=10.10.0.2:30500/site", "--ca-file=/etc/bpa/site-registry/ca.crt",
		"--binary-digest=master:tool=" + toolDigest, "--binary-digest=worker:tool=" + toolDigest}
	if d := cmp.Diff(wantArgs, install.Args[len(install.Args)-len(wantArgs):]); d != "" {
		t.Errorf("install-software's last arguments (-want +got):\n%s", d)
	}
	fromSecret := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "bpa-site-registry"}, Key: key}}
	}
	wantEnv := []corev1.EnvVar{
		{Name: "BPA_REGISTRY_PASSWORD", ValueFrom: fromSecret("password")},
		{Name: "BPA_REGISTRY_USERNAME", ValueFrom: fromSecret("username")},
		{Name: "HOME", Value: "/tmp"},
	}
	if d := cmp.Diff(wantEnv, install.Env); d != "" {
		t.Errorf("install-software's environment (-want +got):\n%s", d)
	}

	opts.SiteRegistry = ""
	if _, err := compile.Software(sw, opts); err == nil || !strings.Contains(err.Error(), "spec.masterBinaries: Forbidden: binaries come from the site registry, and this controller has none (--site-registry)") {
		t.Fatalf("without a site registry: %v", err)
	}
	// Without binaries, nothing of the registry reaches the Workflow.
	plainDocs, err := manifest.ReadFile(testutil.Fixture(t, "software-cluster-xyz.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plain := plainDocs[0].Object.(*bpav1.Software)
	opts.SiteRegistry = "10.10.0.2:30500/site"
	wf, err = compile.Software(plain, opts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(marshal(t, wf)), "registry") {
		t.Error("a Software without binaries got the site registry")
	}
}

func TestValidatorIsNotANoOp(t *testing.T) {
	wf, err := compile.Provisioning(testutil.Provisioning(t, "provisioning-cluster-efg-kud-plugins.yaml"), options(t))
	if err != nil {
		t.Fatal(err)
	}
	broken := wf.DeepCopy()
	broken.Spec.Templates[0].DAG.Tasks[1].Template = "no-such-template"
	if err := argovalidate.Workflow(broken); err == nil {
		t.Error("Argo's validator accepted a task naming a template that does not exist")
	}
	broken = wf.DeepCopy()
	last := len(broken.Spec.Templates[0].DAG.Tasks) - 1
	broken.Spec.Templates[0].DAG.Tasks[last].TemplateRef.Name = "bpa-plugin-nothing"
	if err := argovalidate.Workflow(broken); err == nil {
		t.Error("Argo's validator accepted a templateRef to a WorkflowTemplate that is not shipped")
	}
}

func TestCompileIsDeterministicAndPure(t *testing.T) {
	p := testutil.Provisioning(t, "provisioning-cluster-xyz-resources.yaml")
	p.Spec.Kubespray = &bpav1.KubesprayOptions{ExtraVars: map[string]bpav1.ExtraVarValue{"b": bpav1.ExtraVar("1"), "a": bpav1.ExtraVar("2"), "c": bpav1.ExtraVar("3")}}
	before := p.DeepCopy()
	first, err := compile.Provisioning(p, options(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		again, err := compile.Provisioning(p, options(t))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(marshal(t, first)), string(marshal(t, again))); diff != "" {
			t.Fatalf("compile %d differs:\n%s", i, diff)
		}
	}
	if diff := cmp.Diff(before, p); diff != "" {
		t.Errorf("Compile modified its input (-before +after):\n%s", diff)
	}
}

func provisioningWithWorkers(n int) *bpav1.Provisioning {
	p := &bpav1.Provisioning{}
	p.Name, p.Namespace, p.Generation = "big", "default", 1
	p.Labels = map[string]string{"cluster": "big"}
	p.Spec.Masters = []bpav1.HostEntry{{"master-0": {MACAddress: "02:00:00:00:00:00"}}}
	for i := 0; i < n; i++ {
		p.Spec.Workers = append(p.Spec.Workers, bpav1.HostEntry{fmt.Sprintf("worker-%d", i): {
			MACAddress: fmt.Sprintf("02:00:00:00:%02x:%02x", (i+1)/256, (i+1)%256),
			CPU:        ptr.To[int32](8),
			Memory:     ptr.To(resource.MustParse("16Gi")),
		}})
	}
	return p
}

// TestCompiledSizeDoesNotGrowWithHosts: the Workflow names its CR rather than copying it, and
// fans out per node at run time.
func TestCompiledSizeDoesNotGrowWithHosts(t *testing.T) {
	small, err := compile.Provisioning(provisioningWithWorkers(3), options(t))
	if err != nil {
		t.Fatal(err)
	}
	large, err := compile.Provisioning(provisioningWithWorkers(3000), options(t))
	if err != nil {
		t.Fatal(err)
	}
	s, l := len(marshal(t, small)), len(marshal(t, large))
	if float64(l) > 1.5*float64(s) {
		t.Errorf("3000 workers compile to %d bytes, more than 1.5x the %d bytes of 3", l, s)
	}
	t.Logf("3 workers: %d bytes; 3000 workers: %d bytes", s, l)
}

func TestWorkflowContract(t *testing.T) {
	p := testutil.Provisioning(t, "provisioning-cluster-efg-kud-plugins.yaml")
	p.UID, p.Generation = "u-1", 7
	wf, err := compile.Provisioning(p, options(t))
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"bpa.akraino.org/cluster": "cluster-efg", "bpa.akraino.org/kind": "provisioning",
		"bpa.akraino.org/name": "sample-kud-plugins", "bpa.akraino.org/generation": "7",
		"bpa.akraino.org/run": compile.RunID(&p.ObjectMeta, compile.WorkflowScopeAll),
	}
	if diff := cmp.Diff(wantLabels, wf.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if wf.Namespace != "default" || len(wf.OwnerReferences) != 1 || wf.OwnerReferences[0].UID != "u-1" || !*wf.OwnerReferences[0].Controller {
		t.Errorf("the Workflow must live in its CR's namespace and be owned by it: %v %v", wf.Namespace, wf.OwnerReferences)
	}
	if m := wf.Spec.Synchronization.Mutexes; len(m) != 1 || m[0].Name != "bpa-cluster-cluster-efg" {
		t.Errorf("mutexes = %v, want one per cluster", m)
	}
	var tasks []string
	for _, task := range wf.Spec.Templates[0].DAG.Tasks {
		tasks = append(tasks, task.Name+" <- "+task.Depends)
	}
	wantTasks := []string{
		"discover-hosts <- ",
		"resolve-leases <- discover-hosts.Succeeded",
		"render-inventory <- resolve-leases.Succeeded",
		"pin-host-keys <- resolve-leases.Succeeded",
		"run-kubespray <- pin-host-keys.Succeeded && render-inventory.Succeeded",
		"fetch-kubeconfig <- run-kubespray.Succeeded",
		"read-certificates <- fetch-kubeconfig.Succeeded",
		"check-run-kubespray <- fetch-kubeconfig.Succeeded",
		"kud-plugin-onap4k8s <- fetch-kubeconfig.Succeeded",
	}
	if diff := cmp.Diff(wantTasks, tasks); diff != "" {
		t.Errorf("DAG (-want +got):\n%s", diff)
	}
	if wf.Spec.OnExit != "report-nodes" {
		t.Errorf("onExit %q: the nodes' versions are read whatever the outcome", wf.Spec.OnExit)
	}
	// The SSH key reaches only the steps that log in to nodes.
	for _, tmpl := range wf.Spec.Templates {
		if tmpl.Container == nil {
			continue
		}
		mountsKey := false
		for _, m := range tmpl.Container.VolumeMounts {
			mountsKey = mountsKey || m.Name == "ssh-key"
		}
		if want := tmpl.Name == "run-kubespray" || tmpl.Name == "fetch-kubeconfig" || tmpl.Name == "read-certificates"; mountsKey != want {
			t.Errorf("template %s mounts the SSH key: %v, want %v", tmpl.Name, mountsKey, want)
		}
		mountsKubeconfig := slices.ContainsFunc(tmpl.Container.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "kubeconfig" })
		if want := tmpl.Name == "report-nodes" || tmpl.Name == "check-every-node"; mountsKubeconfig != want {
			t.Errorf("template %s mounts the new cluster's kubeconfig: %v, want %v", tmpl.Name, mountsKubeconfig, want)
		}
		if sc := tmpl.Container.SecurityContext; sc == nil || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation {
			t.Errorf("template %s: step containers run non-root, read-only, without privilege escalation", tmpl.Name)
		}
	}
	// Pods run as their cluster's own identity; the pods that call no API mount no token, and
	// their executor reports as the namespace's executor identity.
	if wf.Spec.ServiceAccountName != "bpa-step-cluster-efg" {
		t.Errorf("service account %q, want the cluster's own", wf.Spec.ServiceAccountName)
	}
	for _, tmpl := range wf.Spec.Templates {
		noToken := tmpl.AutomountServiceAccountToken != nil && !*tmpl.AutomountServiceAccountToken
		if want := tmpl.Name == "run-kubespray" || tmpl.Name == "report-nodes" || tmpl.Name == "check-every-node"; noToken != want {
			t.Errorf("template %s mounts no token: %v, want %v", tmpl.Name, noToken, want)
		}
		if noToken && (tmpl.Executor == nil || tmpl.Executor.ServiceAccountName != "bpa-workflow-executor") {
			t.Errorf("template %s: executor %+v, want bpa-workflow-executor", tmpl.Name, tmpl.Executor)
		}
	}
	// kubespray checks host keys strictly, against the pinned ones.
	env := map[string]string{}
	for _, e := range wf.GetTemplateByName("run-kubespray").Container.Env {
		env[e.Name] = e.Value
	}
	want := map[string]string{
		"ANSIBLE_CALLBACK_PLUGINS":        "/inputs/callback_plugins:~/.ansible/plugins/callback:/usr/share/ansible/plugins/callback",
		"ANSIBLE_FORCE_COLOR":             "False",
		"ANSIBLE_HOST_KEY_CHECKING":       "True",
		"ANSIBLE_LOCAL_TEMP":              "/tmp/.ansible/tmp",
		"ANSIBLE_CACHE_PLUGIN":            "jsonfile",
		"ANSIBLE_CACHE_PLUGIN_CONNECTION": "/tmp/kubespray-facts",
		"ANSIBLE_REMOTE_TMP":              "$HOME/.ansible/tmp",
		"ANSIBLE_SSH_ARGS": "-o UserKnownHostsFile=/etc/bpa/known-hosts/known_hosts -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes " +
			"-o ControlMaster=auto -o ControlPersist=30m -o ConnectionAttempts=100 -o ServerAliveInterval=30 -o ServerAliveCountMax=10",
		"HOME":             "/tmp",
		"PYTHONUNBUFFERED": "1",
	}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("run-kubespray's environment: want strict host key checking against the pinned keys (-want +got):\n%s", diff)
	}
	if wf.Spec.ActiveDeadlineSeconds == nil || *wf.Spec.ActiveDeadlineSeconds <= 0 {
		t.Error("no activeDeadlineSeconds")
	}
	for _, tmpl := range []string{"discover-hosts", "resolve-leases", "fetch-kubeconfig"} {
		if r := wf.GetTemplateByName(tmpl).RetryStrategy; r == nil || r.Backoff == nil {
			t.Errorf("template %s waits for the world and needs a retryStrategy with backoff", tmpl)
		}
	}
}

func TestWorkflowName(t *testing.T) {
	long := strings.Repeat("a", 240)
	run := "0123456789abcdef"
	cases := []struct{ kind, name, want string }{
		{bpav1.WorkflowKindProvisioning, "provisioning-sample", "prov-provisioning-sample-1-01234"},
		{bpav1.WorkflowKindSoftware, "example-software", "sw-example-software-1-01234"},
	}
	for _, tc := range cases {
		if got := compile.WorkflowName(tc.kind, tc.name, 1, run); got != tc.want {
			t.Errorf("WorkflowName(%s, %s) = %s, want %s", tc.kind, tc.name, got, tc.want)
		}
	}
	a := compile.WorkflowName(bpav1.WorkflowKindProvisioning, long+"x", 12345, run)
	b := compile.WorkflowName(bpav1.WorkflowKindProvisioning, long+"y", 12345, run)
	if len(a) > compile.MaxWorkflowNameLength || len(b) > compile.MaxWorkflowNameLength {
		t.Errorf("names longer than %d: %d, %d", compile.MaxWorkflowNameLength, len(a), len(b))
	}
	if a == b {
		t.Errorf("two long names that differ only at the end compile to the same Workflow name %s", a)
	}
	if !strings.HasSuffix(a, "-12345-01234") {
		t.Errorf("a cut name keeps its generation and run: %s", a)
	}

	// A day-2 Software run over some nodes has its own scope, the same for the same nodes in
	// any order.
	scope := compile.Scope([]string{"worker-2", "worker-1"})
	if scope != compile.Scope([]string{"worker-1", "worker-2"}) || scope == compile.Scope([]string{"worker-1"}) {
		t.Errorf("Scope is not a function of the node set: %s", scope)
	}
	if compile.Scope(nil) != compile.WorkflowScopeAll {
		t.Errorf("Scope(nil) = %s, want %s", compile.Scope(nil), compile.WorkflowScopeAll)
	}
}

// TestRunID: every input that makes a run new gives another id, so a new run never meets an
// old Workflow under its name: a recreated CR (uid), a new generation, another node set, a
// rerun request or another cluster generation (a node that left and rejoined).
func TestRunID(t *testing.T) {
	meta := &metav1.ObjectMeta{Name: "p", UID: "uid-1", Generation: 2}
	base := compile.RunID(meta, compile.WorkflowScopeAll)
	if base != compile.RunID(meta.DeepCopy(), compile.WorkflowScopeAll) {
		t.Fatal("RunID is not deterministic")
	}
	other := func(mutate func(m *metav1.ObjectMeta)) *metav1.ObjectMeta {
		m := meta.DeepCopy()
		mutate(m)
		return m
	}
	for _, tc := range []struct{ reason, id string }{
		{"another incarnation of the CR", compile.RunID(other(func(m *metav1.ObjectMeta) { m.UID = "uid-2" }), compile.WorkflowScopeAll)},
		{"another generation", compile.RunID(other(func(m *metav1.ObjectMeta) { m.Generation = 3 }), compile.WorkflowScopeAll)},
		{"another node set", compile.RunID(meta, compile.Scope([]string{"worker-1"}))},
		{"a rerun request", compile.RunID(meta, compile.WorkflowScopeAll, "rerun-1")},
		{"salts are not concatenated", compile.RunID(meta, compile.WorkflowScopeAll, "a", "b")},
	} {
		if tc.id == base {
			t.Errorf("%s: same run id %s", tc.reason, tc.id)
		}
	}
	if compile.RunID(meta, compile.WorkflowScopeAll, "ab") == compile.RunID(meta, compile.WorkflowScopeAll, "a", "b") {
		t.Error("salt boundaries are lost")
	}

	// The compiled Workflow carries the run in its label and its name.
	p := testutil.Provisioning(t, "provisioning-cluster-abc.yaml")
	p.UID, p.Generation = "uid-1", 2
	opts := compile.DefaultOptions([]string{"multus"})
	opts.Run = compile.RunID(&p.ObjectMeta, compile.WorkflowScopeAll, "rerun-1")
	wf, err := compile.Provisioning(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if wf.Labels[bpav1.WorkflowRunLabel] != opts.Run || !strings.HasSuffix(wf.Name, "-2-"+opts.Run[:5]) {
		t.Errorf("Workflow %s labels %v: want run %s in both", wf.Name, wf.Labels, opts.Run)
	}
	opts.Run = "not a run"
	if _, err := compile.Provisioning(p, opts); err == nil || !strings.Contains(err.Error(), "run") {
		t.Errorf("a malformed run id compiled: %v", err)
	}
}

func TestCompileRefuses(t *testing.T) {
	base := func() *bpav1.Provisioning { return testutil.Provisioning(t, "provisioning-cluster-abc.yaml") }
	cases := []struct {
		name, reason string
		mutate       func(*bpav1.Provisioning)
		opts         func(*compile.Options)
		wantErr      string
	}{
		{"missing-cluster-label", "the cluster label is required", func(p *bpav1.Provisioning) { delete(p.Labels, "cluster") }, nil,
			"metadata.labels[cluster]: Required value"},
		{"reserved-label", "a worker labelled all would make ansible-inventory drop every host's variables",
			func(p *bpav1.Provisioning) { p.Spec.Workers[0] = bpav1.HostEntry{"all": p.Spec.Workers[0]["worker-1"]} }, nil,
			`spec.workers[0][all]: Invalid value: "all": a host label may not be one of`},
		{"name-with-shell", "metadata.name is checked as the API server would",
			func(p *bpav1.Provisioning) { p.Name = "abc;reboot" }, nil, `metadata.name: Invalid value: "abc;reboot"`},
		{"no-name", "a CR without a name would compile to a Workflow the API server refuses",
			func(p *bpav1.Provisioning) { p.Name = "" }, nil, `metadata.name: Required value`},
		{"kubespray-image-not-allowed", "the kubespray pod holds the SSH key: its image is the administrator's choice",
			func(p *bpav1.Provisioning) {
				p.Spec.Kubespray = &bpav1.KubesprayOptions{Image: "attacker/kubespray:latest"}
			}, nil,
			`spec.kubespray.image: Forbidden: image "attacker/kubespray:latest" is not one the site administrator allows`},
		{"host-namespace-not-allowed", "the steps' identity is granted BareMetalHosts only where the administrator allows",
			func(p *bpav1.Provisioning) {
				p.Spec.HostSelector = &bpav1.HostSelector{Namespaces: []string{"default", "tenant-b"}}
			}, nil,
			`spec.hostSelector.namespaces[1]: Forbidden: namespace "tenant-b"`},
		{"unknown-plugin", "a plugin without a WorkflowTemplate is a compile error", func(p *bpav1.Provisioning) { p.Spec.KUDPlugins = []string{"multus", "nope"} }, nil,
			`spec.KUDPlugins[1]: Unsupported value: "nope"`},
		{"plugin-path", "plugin names may not hold path characters", func(p *bpav1.Provisioning) { p.Spec.KUDPlugins = []string{"../etc"} }, nil,
			`spec.KUDPlugins[0]: Invalid value: "../etc"`},
		{"bad-mac", "a malformed MAC names its entry", func(p *bpav1.Provisioning) {
			p.Spec.Workers[0]["worker-1"] = bpav1.HostRequirements{MACAddress: "00:c6:14:04:61"}
		}, nil,
			`spec.workers[0][worker-1].mac-address: Invalid value: "00:c6:14:04:61"`},
		{"bad-label", "a label must be a DNS-1123 label", func(p *bpav1.Provisioning) {
			p.Spec.Workers[0] = bpav1.HostEntry{"w ansible_host=1.2.3.4": {MACAddress: "00:c6:14:04:61:b2"}}
		}, nil, `spec.workers[0][w ansible_host=1.2.3.4]: Invalid value`},
		{"repeated-mac", "two labels may not share a MAC", func(p *bpav1.Provisioning) {
			p.Spec.Workers[1] = bpav1.HostEntry{"worker-2": {MACAddress: "00:C6:14:04:61:B2"}}
		}, nil, `spec.workers[1][worker-2].mac-address: Invalid value: "00:C6:14:04:61:B2": the same MAC is already given to spec.workers[0][worker-1]`},
		{"repeated-label", "a label twice in one list is an error", func(p *bpav1.Provisioning) {
			p.Spec.Workers[1] = bpav1.HostEntry{"worker-1": {MACAddress: "00:c2:12:03:62:b2"}}
		}, nil, `spec.workers[1][worker-1]: Duplicate value: "worker-1"`},
		{"empty-entry", "an entry needs something to choose by", func(p *bpav1.Provisioning) { p.Spec.Workers[0]["worker-1"] = bpav1.HostRequirements{} }, nil,
			"spec.workers[0][worker-1]: Required value: an entry needs a mac-address, cpu, memory, sriov or qat"},
		{"bad-subnet", "PodSubnet must be a CIDR", func(p *bpav1.Provisioning) { p.Spec.PodSubnet = "10.0.0.0/33" }, nil,
			`spec.PodSubnet: Invalid value: "10.0.0.0/33"`},
		{"jinja-extra-var", "extra vars may not carry Jinja2", func(p *bpav1.Provisioning) {
			p.Spec.Kubespray = &bpav1.KubesprayOptions{ExtraVars: map[string]bpav1.ExtraVarValue{"x": bpav1.ExtraVar("{{ lookup('pipe', 'id') }}")}}
		}, nil, "spec.kubespray.extraVars[x]: Invalid value"},
		{"ansible-extra-var", "extra vars may not steer the connection", func(p *bpav1.Provisioning) {
			p.Spec.Kubespray = &bpav1.KubesprayOptions{ExtraVars: map[string]bpav1.ExtraVarValue{"ansible_ssh_common_args": bpav1.ExtraVar("-o ProxyCommand=x")}}
		}, nil, "spec.kubespray.extraVars[ansible_ssh_common_args]: Invalid value"},
		{"offline-without-mirror", "offline mode needs the site's mirror", func(p *bpav1.Provisioning) { p.Spec.Offline = ptr.To(true) }, nil,
			"spec.offline: Forbidden: offline mode takes kubespray's files and images from the site's mirror, and this controller has none (--offline-mirror)"},
		{"offline-plugins-without-manifests", "offline, a plugin's manifest comes from the mirror's set of them",
			func(p *bpav1.Provisioning) { p.Spec.KUDPlugins = []string{"multus"} },
			func(o *compile.Options) { o.Offline, o.OfflineMirror = true, "http://10.10.0.2:30880" },
			"spec.KUDPlugins[0]: Forbidden: offline mode takes the KUD plugins' manifests from the site registry, and this controller names no set of them (--offline-kud-manifests NAME:VERSION)"},
		{"offline-kubespray-by-digest", "a kubespray image without a tag names no file set",
			func(p *bpav1.Provisioning) {
				p.Spec.Offline = ptr.To(true)
				p.Spec.Kubespray = &bpav1.KubesprayOptions{Image: "kubespray/kubespray@sha256:" + strings.Repeat("a", 64)}
			},
			func(o *compile.Options) {
				o.OfflineMirror = "http://10.10.0.2:30880"
				o.AllowedKubesprayImages = []string{"kubespray/kubespray@sha256:" + strings.Repeat("a", 64)}
			},
			"has no tag to name its files by: set the controller's --offline-kubespray-files"},
		{"offline-by-default-without-mirror", "the default mode is checked at start-up", nil, func(o *compile.Options) { o.Offline = true },
			"options: offline mode by default needs the offline mirror"},
		{"bad-offline-mirror", "the mirror is an http(s) URL with nothing Ansible reads", nil, func(o *compile.Options) { o.OfflineMirror = "http://{{x}}:80" },
			"want http(s)://HOST[:PORT]"},
		{"offline-mirror-with-path", "the mirror is the file server's root", nil, func(o *compile.Options) { o.OfflineMirror = "http://10.0.0.2/files" },
			"want http(s)://HOST[:PORT]"},
		{"bad-offline-file-set", "file sets are NAME:VERSION", nil, func(o *compile.Options) { o.OfflineKUDManifests = "kud/plugins" },
			"options: offline mirror: file-set \"kud/plugins\": want NAME:VERSION"},
		{"bad-step-image", "options are validated too", nil, func(o *compile.Options) { o.StepImage = "img; rm -rf /" },
			`options: step image "img; rm -rf /" is not an image reference`},
		{"bad-ssh-key-secret", "the site's SSH key Secret is a name", nil, func(o *compile.Options) { o.SSHKeySecret = "../key" },
			`options: SSH key Secret "../key" is not a Secret name`},
		{"bad-kubectl-image", "the plugin pods' image is an option, validated", nil, func(o *compile.Options) { o.KubectlImage = "kubectl --token=x" },
			`options: kubectl image "kubectl --token=x" is not an image reference`},
		{"lease-node-selector-without-lease-file", "a selector for a lease file that is not there is a mistake", nil,
			func(o *compile.Options) { o.LeaseNodeSelector = map[string]string{"bpa.akraino.org/dhcp": "true"} },
			`options: a lease node selector without a lease file selects nothing`},
		{"bad-lease-node-selector", "node selector labels are validated as the API server would", nil,
			func(o *compile.Options) {
				o.LeaseFile, o.LeaseFormat = "/var/lib/misc/dnsmasq.leases", leases.FormatDnsmasq
				o.LeaseNodeSelector = map[string]string{"dhcp host": "yes"}
			}, `options: leaseNodeSelector: Invalid value: "dhcp host"`},
		{"scale-without-nodes", "scale mode needs nodes", nil, func(o *compile.Options) { o.Kubespray.Mode = runkubespray.ModeScale },
			`kubespray mode "scale" needs the nodes to add`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			if tc.mutate != nil {
				tc.mutate(p)
			}
			opts := options(t)
			if tc.opts != nil {
				tc.opts(&opts)
			}
			wf, err := compile.Provisioning(p, opts)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("%s: want error containing %q, got %v (workflow %v)", tc.reason, tc.wantErr, err, wf != nil)
			}
		})
	}
}

// TestCompileAllows: what the administrator allows compiles.
func TestCompileAllows(t *testing.T) {
	p := testutil.Provisioning(t, "provisioning-cluster-abc.yaml")
	p.Spec.Kubespray = &bpav1.KubesprayOptions{Image: "site/kubespray:v2.28.0-patched"}
	p.Spec.HostSelector = &bpav1.HostSelector{Namespaces: []string{"metal3"}}
	opts := options(t)
	opts.AllowedKubesprayImages = []string{"site/kubespray:v2.28.0-patched"}
	opts.HostNamespaces = []string{"metal3"}
	wf, err := compile.Provisioning(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if img := wf.GetTemplateByName("run-kubespray").Container.Image; img != "site/kubespray:v2.28.0-patched" {
		t.Errorf("kubespray image %s", img)
	}
	p.Spec.Kubespray.Image = compile.DefaultKubesprayImage // the default is always allowed
	if _, err := compile.Provisioning(p, opts); err != nil {
		t.Error(err)
	}
}

func sshKeySecret(wf *wfv1.Workflow) string {
	for _, v := range wf.Spec.Volumes {
		if v.Name == "ssh-key" && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}

// TestSiteOptionsReachThePods: the lease file's node selector pins resolve-leases (and only it)
// to the DHCP server's node; the kubectl image reaches every plugin task.
func TestSiteOptionsReachThePods(t *testing.T) {
	p := testutil.Provisioning(t, "provisioning-cluster-efg-kud-plugins.yaml")
	opts := options(t)
	opts.LeaseFile, opts.LeaseFormat = "/var/lib/misc/dnsmasq.leases", leases.FormatDnsmasq
	opts.LeaseNodeSelector = map[string]string{"bpa.akraino.org/dhcp-server": "true"}
	opts.KubectlImage = "site.example/bpa-kubectl:v1.33.13"
	opts.SSHKeySecret = "site-ssh-key"
	wf, err := compile.Provisioning(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := sshKeySecret(wf); got != "site-ssh-key" {
		t.Errorf("a CR naming no SSH key mounts %q, want the site's", got)
	}
	named := p.DeepCopy()
	named.Spec.SSH = &bpav1.SSHAccess{SecretRef: &bpav1.SecretKeyReference{Name: "efg-key"}}
	if wf, err := compile.Provisioning(named, opts); err != nil || sshKeySecret(wf) != "efg-key" {
		t.Errorf("a CR naming its SSH key: %v, mounts %q", err, sshKeySecret(wf))
	}
	for _, tmpl := range wf.Spec.Templates {
		want := map[string]string(nil)
		if tmpl.Name == "resolve-leases" {
			want = opts.LeaseNodeSelector
		}
		if !maps.Equal(tmpl.NodeSelector, want) {
			t.Errorf("template %s: node selector %v, want %v", tmpl.Name, tmpl.NodeSelector, want)
		}
	}
	plugins := 0
	for _, task := range wf.Spec.Templates[0].DAG.Tasks {
		if task.TemplateRef == nil {
			continue
		}
		plugins++
		if got := task.Arguments.GetParameterByName("kubectl-image"); got == nil || got.Value.String() != opts.KubectlImage {
			t.Errorf("task %s: kubectl-image %v, want %s", task.Name, got, opts.KubectlImage)
		}
	}
	if plugins == 0 {
		t.Fatal("the sample has no plugin task")
	}
}

func TestCompileRefusesSoftware(t *testing.T) {
	cases := []struct {
		name    string
		pkgs    []bpav1.SoftwarePackage
		wantErr string
	}{
		{"option-injection", []bpav1.SoftwarePackage{{Name: "-oDebug::pkgProblemResolver=1"}}, `spec.masterSoftware[0]: Invalid value: "-oDebug::pkgProblemResolver=1"`},
		{"shell", []bpav1.SoftwarePackage{{Name: "curl;reboot"}}, `spec.masterSoftware[0]: Invalid value: "curl;reboot"`},
		{"version-shell", []bpav1.SoftwarePackage{{Name: "jq", Version: "1.5 && reboot"}}, `spec.masterSoftware[0][jq].version: Invalid value: "1.5 && reboot"`},
		{"duplicate", []bpav1.SoftwarePackage{{Name: "jq"}, {Name: "jq", Version: "1.6"}}, `spec.masterSoftware[1]: Duplicate value: "jq"`},
		{"apt-remove", []bpav1.SoftwarePackage{{Name: "openssh-server-"}}, `spec.masterSoftware[0]: Invalid value: "openssh-server-"`},
		{"version-ends-in-dash", []bpav1.SoftwarePackage{{Name: "jq", Version: "1.6-"}}, `spec.masterSoftware[0][jq].version: Invalid value: "1.6-"`},
	}
	binaries := []struct {
		name    string
		bins    []bpav1.BinaryPackage
		wantErr string
	}{
		{"binary-escapes", []bpav1.BinaryPackage{{Name: "../../etc/cron.d/x"}}, `spec.masterBinaries[0].name: Invalid value: "../../etc/cron.d/x"`},
		{"binary-shell", []bpav1.BinaryPackage{{Name: "tool", Version: "1;reboot"}}, `spec.masterBinaries[0].version: Invalid value: "1;reboot"`},
		{"directory-dotdot", []bpav1.BinaryPackage{{Name: "tool", Directory: "/usr/local/../../etc"}}, `spec.masterBinaries[0].directory: Invalid value: "/usr/local/../../etc"`},
		{"directory-relative", []bpav1.BinaryPackage{{Name: "tool", Directory: "bin"}}, `spec.masterBinaries[0].directory: Invalid value: "bin"`},
		{"binary-duplicate", []bpav1.BinaryPackage{{Name: "tool"}, {Name: "tool", Version: "2"}}, `spec.masterBinaries[1].name: Duplicate value: "tool"`},
	}
	for _, b := range binaries {
		cases = append(cases, struct {
			name    string
			pkgs    []bpav1.SoftwarePackage
			wantErr string
		}{b.name, nil, b.wantErr})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &bpav1.Software{}
			s.Name, s.Namespace, s.Labels = "s", "default", map[string]string{"cluster": "c"}
			s.Spec.MasterSoftware = tc.pkgs
			if j := i - (len(cases) - len(binaries)); j >= 0 {
				s.Spec.MasterBinaries = binaries[j].bins
			}
			opts := options(t)
			opts.SiteRegistry = "10.10.0.2:30500"
			_, err := compile.Software(s, opts)
			var invalid *bpav1.InvalidError
			if !errors.As(err, &invalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want an InvalidError containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}

func TestSoftwareNodesLimit(t *testing.T) {
	docs, err := manifest.ReadFile(testutil.Fixture(t, "software-cluster-xyz.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := options(t)
	opts.SoftwareNodes = []string{"worker-9", "worker-3"}
	wf, err := compile.Software(docs[0].Object.(*bpav1.Software), opts)
	if err != nil {
		t.Fatal(err)
	}
	args := wf.GetTemplateByName("resolve-cluster-hosts").Container.Args
	if last := args[len(args)-1]; last != "--only=worker-3,worker-9" {
		t.Errorf("the node limit reaches resolve-cluster-hosts sorted: %s", last)
	}
	if err := argovalidate.Workflow(wf); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkCompileProvisioning(b *testing.B) {
	p := provisioningWithWorkers(3000)
	opts := options(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compile.Provisioning(p, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompileSoftware(b *testing.B) {
	docs, err := manifest.ReadFile(testutil.Fixture(b, "software-cluster-xyz.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	s := docs[0].Object.(*bpav1.Software)
	opts := options(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compile.Software(s, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRetention: the site's retention reaches every compiled Workflow as Argo's ttlStrategy and
// podGC; zero keeps Workflows, an empty podGC leaves the pods to their Workflow, and a strategy
// Argo does not know is refused.
func TestRetention(t *testing.T) {
	p := testutil.Provisioning(t, "provisioning-cluster-abc.yaml")
	for _, tc := range []struct {
		name, reason string
		retention    compile.Retention
		wantTTL      *wfv1.TTLStrategy
		wantPodGC    *wfv1.PodGC
		wantErr      string
	}{
		{name: "default", reason: "a week after success, 30 days after failure, succeeded pods deleted",
			retention: compile.DefaultRetention,
			wantTTL:   &wfv1.TTLStrategy{SecondsAfterSuccess: ptr.To[int32](604800), SecondsAfterFailure: ptr.To[int32](2592000)},
			wantPodGC: &wfv1.PodGC{Strategy: wfv1.PodGCOnPodSuccess}},
		{name: "keep", reason: "zero keeps Workflows and their pods",
			retention: compile.Retention{}},
		{name: "failures only", reason: "a failed run kept a day, a succeeded one forever, pods gone with a finished Workflow",
			retention: compile.Retention{FailureSeconds: 86400, PodGC: wfv1.PodGCOnWorkflowCompletion},
			wantTTL:   &wfv1.TTLStrategy{SecondsAfterFailure: ptr.To[int32](86400)},
			wantPodGC: &wfv1.PodGC{Strategy: wfv1.PodGCOnWorkflowCompletion}},
		{name: "unknown strategy", reason: "refused, naming the ones Argo knows",
			retention: compile.Retention{PodGC: "Never"}, wantErr: `pod GC "Never": want one of OnPodCompletion`},
		{name: "negative", reason: "refused", retention: compile.Retention{SuccessSeconds: -1}, wantErr: "must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := options(t)
			opts.Retention = tc.retention
			wf, err := compile.Provisioning(p, opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s: %v, want %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.wantTTL, wf.Spec.TTLStrategy); d != "" {
				t.Errorf("%s: ttlStrategy (-want +got):\n%s", tc.reason, d)
			}
			if d := cmp.Diff(tc.wantPodGC, wf.Spec.PodGC); d != "" {
				t.Errorf("%s: podGC (-want +got):\n%s", tc.reason, d)
			}
			if err := argovalidate.Workflow(wf); err != nil {
				t.Errorf("Argo's validator: %v", err)
			}
		})
	}
}

// TestDraw: a compiled DAG drawn as Mermaid and dot, each task once in run order, each
// dependency an arrow (golden files; -update rewrites them); an unknown format is refused.
func TestDraw(t *testing.T) {
	p, err := compile.Provisioning(testutil.Provisioning(t, "provisioning-cluster-efg-kud-plugins.yaml"), options(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{compile.PictureMermaid, compile.PictureDot} {
		picture, err := compile.Draw(p, format)
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "provisioning-cluster-efg-kud-plugins."+format, picture)
		// Every dependency of the DAG is an arrow.
		arrows := strings.Count(string(picture), "->")
		want := 0
		for _, task := range p.GetTemplateByName(p.Spec.Entrypoint).DAG.Tasks {
			want += strings.Count(task.Depends, ".Succeeded")
		}
		if arrows != want {
			t.Errorf("%s: %d arrows, want %d (one a dependency)", format, arrows, want)
		}
	}
	if _, err := compile.Draw(p, "svg"); err == nil || !strings.Contains(err.Error(), `picture format "svg"`) {
		t.Errorf("an unknown format: %v", err)
	}
}

// TestDefaultsFollowGoMod: the default kubectl image is the Kubernetes version the product is
// built against (go.mod's k8s.io/api v0.X.Y is v1.X.Y), which hack/versions.sh derives for the
// control plane and the images: one version, stated once.
func TestDefaultsFollowGoMod(t *testing.T) {
	raw, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api v0\.(\d+\.\d+)$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/api")
	}
	if want := "bpa-kubectl:v1." + string(m[1]); compile.DefaultKubectlImage != want {
		t.Errorf("DefaultKubectlImage = %s; go.mod's Kubernetes makes it %s", compile.DefaultKubectlImage, want)
	}
}

// TestFanOutItemsAreNodes: install-software fans out over resolve-cluster-hosts' output, a list
// of bpav1.Node; every {{item.KEY}} the compiled fan-out reads must be a JSON field of that
// one node shape, or the pods get the literal text.
func TestFanOutItemsAreNodes(t *testing.T) {
	raw, err := json.Marshal(bpav1.Node{Label: "m", Role: bpav1.RoleMaster, BareMetalHost: "ns/h", MAC: "00:00:00:00:00:01", IP: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	docs, err := manifest.ReadFile(testutil.Fixture(t, "software-cluster-xyz.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wf, err := compile.Software(docs[0].Object.(*bpav1.Software), options(t))
	if err != nil {
		t.Fatal(err)
	}
	item := regexp.MustCompile(`\{\{item\.([A-Za-z]+)\}\}`)
	var seen int
	for _, task := range wf.GetTemplateByName(compile.SoftwareEntrypoint).DAG.Tasks {
		for _, p := range task.Arguments.Parameters {
			for _, m := range item.FindAllStringSubmatch(p.Value.String(), -1) {
				seen++
				if _, ok := fields[m[1]]; !ok {
					t.Errorf("task %s, parameter %s reads {{item.%s}}: not a field of bpav1.Node %s", task.Name, p.Name, m[1], raw)
				}
			}
		}
	}
	if seen != 3 {
		t.Errorf("%d item references, want the node's label, role and address", seen)
	}
}
