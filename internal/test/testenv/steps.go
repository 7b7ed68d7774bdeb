package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/identity"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/scheme"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/workflows"
)

// What the steps' runtime tests share: a namespace of their own, the sample site's
// BareMetalHosts, a Provisioning from a fixture, and node keys pinned as pin-host-keys leaves
// them.

// Namespace creates a new namespace with a random name.
func (e *Env) Namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t-" + strings.ToLower(rand.String(8))}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// LoadSite creates the sample site's BareMetalHosts, with their status, in namespace ns.
func (e *Env) LoadSite(t *testing.T, ns string) map[string]*metal3v1alpha1.BareMetalHost {
	t.Helper()
	ctx := context.Background()
	out := map[string]*metal3v1alpha1.BareMetalHost{}
	for _, h := range testutil.SiteHosts(t) {
		obj := &metal3v1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Name: h.Name, Namespace: ns, Labels: h.Labels}, Spec: h.Spec}
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		obj.Status = h.Status
		if err := e.Client.Status().Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
		out[h.Name] = obj
	}
	return out
}

// Provisioning creates a fixture Provisioning in ns that looks for hosts in hostsNS only, and
// names it as a compiled step would.
func (e *Env) Provisioning(t *testing.T, fixture, ns, name, hostsNS string) (*bpav1.Provisioning, stepcmd.CRRef) {
	t.Helper()
	p := testutil.Provisioning(t, fixture)
	p.Namespace, p.Name = ns, name
	p.Spec.HostSelector = &bpav1.HostSelector{Namespaces: []string{hostsNS}}
	if err := e.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p, stepcmd.CRRef{Namespace: ns, Name: name, UID: string(p.UID), Generation: p.Generation}
}

// Host reads h again.
func (e *Env) Host(t *testing.T, h *metal3v1alpha1.BareMetalHost) *metal3v1alpha1.BareMetalHost {
	t.Helper()
	cur := &metal3v1alpha1.BareMetalHost{}
	if err := e.Client.Get(context.Background(), client.ObjectKeyFromObject(h), cur); err != nil {
		t.Fatal(err)
	}
	return cur
}

// PinnedNamespace is a new namespace where sshd's node is pinned for cluster-abc.
func (e *Env) PinnedNamespace(t *testing.T, sshd *testsshd.Server) string {
	t.Helper()
	ns := e.Namespace(t)
	e.PinNode(t, ns, sshd.Port, sshd.HostKey)
	return ns
}

// PinNode pins the host key of 127.0.0.1:port for cluster-abc in ns, as pin-host-keys leaves
// it: the steps after it reach only pinned nodes.
func (e *Env) PinNode(t *testing.T, ns string, port int, key ssh.PublicKey) {
	t.Helper()
	e.PinNodeAt(t, ns, "127.0.0.1:"+strconv.Itoa(port), key)
}

// PinNodeAt pins the host key of addr for cluster-abc in ns, known_hosts line included.
func (e *Env) PinNodeAt(t *testing.T, ns, addr string, key ssh.PublicKey) {
	t.Helper()
	line, err := sshexec.KnownHostsLine(addr, key)
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-abc-known-hosts"}}
	_, err = controllerutil.CreateOrUpdate(context.Background(), e.Client, sec, func() error {
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[strings.ReplaceAll(addr, ":", "_")] = ssh.MarshalAuthorizedKey(key)
		sec.Data["known_hosts"] = append(sec.Data["known_hosts"], []byte(line+"\n")...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Software creates Software "sw" of cluster-abc in ns with spec, and names it as a compiled
// step would.
func (e *Env) Software(t *testing.T, ns string, spec bpav1.SoftwareSpec) stepcmd.CRRef {
	t.Helper()
	sw := &bpav1.Software{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sw", Labels: map[string]string{bpav1.ClusterLabel: "cluster-abc"}},
		Spec:       spec,
	}
	if err := e.Client.Create(context.Background(), sw); err != nil {
		t.Fatal(err)
	}
	return stepcmd.CRRef{Namespace: ns, Name: sw.Name, UID: string(sw.UID), Generation: sw.Generation}
}

// StepIdentity writes the step identity of p's cluster as the controller does
// (internal/identity) and returns a kubeconfig and a client acting as its ServiceAccount
// (impersonated, with the ServiceAccount's groups): what a step pod's token can do, nothing more.
func (e *Env) StepIdentity(t *testing.T, p *bpav1.Provisioning) (kubeconfig string, c client.Client) {
	t.Helper()
	if err := identity.Ensure(context.Background(), e.Client, e.Client, p, p.HostNamespaces()); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + p.Namespace + ":" + steps.StepServiceAccount(p.Labels[bpav1.ClusterLabel]),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + p.Namespace, "system:authenticated"},
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["step"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken,
		Impersonate: cfg.Impersonate.UserName, ImpersonateGroups: cfg.Impersonate.Groups,
	}
	kc.Contexts["step"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "step"}
	kc.CurrentContext = "step"
	path := filepath.Join(testinterrupt.TempDir(t), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return path, c
}

// Compiled is p's Workflow with the default options: what the steps run as.
func Compiled(t testing.TB, p *bpav1.Provisioning) *wfv1.Workflow {
	t.Helper()
	plugins, err := workflows.Plugins()
	if err != nil {
		t.Fatal(err)
	}
	wf, err := compile.Provisioning(p, compile.DefaultOptions(plugins))
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// KubesprayEnv is run-kubespray's environment as compiled for p, with the pod's paths mapped to
// the test's: the pinned known_hosts at knownHosts, the pod's /tmp (HOME, Ansible's local temp)
// at scratch. A test runs ansible-playbook in it exactly as the pod runs kubespray.
func KubesprayEnv(t *testing.T, p *bpav1.Provisioning, knownHosts, scratch string) []string {
	t.Helper()
	out := []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}
	for _, e := range Compiled(t, p).GetTemplateByName("run-kubespray").Container.Env {
		value := strings.ReplaceAll(e.Value, steps.KnownHostsPath, knownHosts)
		if e.Name == "HOME" || e.Name == "ANSIBLE_LOCAL_TEMP" {
			value = strings.Replace(value, steps.TmpDir, scratch, 1)
		}
		out = append(out, e.Name+"="+value)
	}
	return out
}
