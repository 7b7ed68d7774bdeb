package steprun_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/steprun"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testutil"
)

var env *testenv.Env

// TestMain starts one real kube-apiserver and etcd for the steps' tests.
func TestMain(m *testing.M) {
	testenv.Main(m, &env)
}

func ctx() context.Context { return context.Background() }

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t-" + strings.ToLower(rand.String(8))}}
	if err := env.Client.Create(ctx(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// loadSite creates the sample site's BareMetalHosts, with their status, in namespace ns.
func loadSite(t *testing.T, ns string) map[string]*metal3v1alpha1.BareMetalHost {
	t.Helper()
	out := map[string]*metal3v1alpha1.BareMetalHost{}
	for _, h := range testutil.SiteHosts(t) {
		obj := &metal3v1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Name: h.Name, Namespace: ns, Labels: h.Labels}, Spec: h.Spec}
		if err := env.Client.Create(ctx(), obj); err != nil {
			t.Fatal(err)
		}
		obj.Status = h.Status
		if err := env.Client.Status().Update(ctx(), obj); err != nil {
			t.Fatal(err)
		}
		out[h.Name] = obj
	}
	return out
}

// provisioning creates a fixture Provisioning in ns that looks for hosts in hostsNS only.
func provisioning(t *testing.T, fixture, ns, name, hostsNS string) (*bpav1.Provisioning, steprun.CRRef) {
	t.Helper()
	p := testutil.Provisioning(t, fixture)
	p.Namespace, p.Name = ns, name
	p.Spec.HostSelector = &bpav1.HostSelector{Namespaces: []string{hostsNS}}
	if err := env.Client.Create(ctx(), p); err != nil {
		t.Fatal(err)
	}
	return p, steprun.CRRef{Namespace: ns, Name: name, UID: string(p.UID), Generation: p.Generation}
}

func host(t *testing.T, h *metal3v1alpha1.BareMetalHost) *metal3v1alpha1.BareMetalHost {
	t.Helper()
	cur := &metal3v1alpha1.BareMetalHost{}
	if err := env.Client.Get(ctx(), client.ObjectKeyFromObject(h), cur); err != nil {
		t.Fatal(err)
	}
	return cur
}

func asExit(err error, target **sshexec.ExitError) bool { return errors.As(err, target) }

// pinnedNamespace is a new namespace where sshd's node is pinned for cluster-abc.
func pinnedNamespace(t *testing.T, sshd *testsshd.Server) string {
	t.Helper()
	ns := newNamespace(t)
	pinNode(t, ns, sshd.Port, sshd.HostKey)
	return ns
}

// pinNode pins the host key of 127.0.0.1:port for cluster-abc in ns, as pin-host-keys leaves
// it: the steps after it reach only pinned nodes.
func pinNode(t *testing.T, ns string, port int, key ssh.PublicKey) {
	t.Helper()
	pinNodeAt(t, ns, "127.0.0.1:"+strconv.Itoa(port), key)
}

// pinNodeAt pins the host key of addr for cluster-abc in ns, known_hosts line included.
func pinNodeAt(t *testing.T, ns, addr string, key ssh.PublicKey) {
	t.Helper()
	line, err := sshexec.KnownHostsLine(addr, key)
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-abc-known-hosts"}}
	_, err = controllerutil.CreateOrUpdate(ctx(), env.Client, sec, func() error {
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
