// Package testenv starts a real kube-apiserver and etcd (controller-runtime's envtest) with
// every CRD the product meets installed: ours, metal3's BareMetalHost and Argo's. The binaries
// come from hack/control-plane.sh (built from the Go module proxy, linked into bin/k8s).
package testenv

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/scheme"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
)

// Env is a running control plane.
type Env struct {
	*envtest.Environment
	Config *rest.Config
	Client client.Client
}

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Start starts the control plane with every CRD and our admission policy. It fails, saying
// what to run, when the binaries are not built: the suites that need it never pass by skipping.
func Start() (*Env, error) { return start(true, true, nil) }

// StartAudited starts the control plane as Start, with the API server writing an audit log
// (policy and log are file paths): what the load harness counts a client's writes with.
func StartAudited(policy, log string) (*Env, error) {
	api := &envtest.APIServer{}
	api.Configure().Set("audit-policy-file", policy).Set("audit-log-path", log).Set("audit-log-maxsize", "0")
	return start(true, true, api)
}

// StartWithoutArgo starts the control plane as Start, but without Argo's CRDs: a site where
// Argo Workflows is not installed yet (InstallArgo installs it).
func StartWithoutArgo() (*Env, error) { return start(true, false, nil) }

// InstallArgo installs Argo's CRDs and waits until they are served.
func (e *Env) InstallArgo() error {
	_, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(RepoRoot(), "config", "thirdparty", "argo")}, ErrorIfPathMissing: true,
	})
	return err
}

// StartThirdParty starts the control plane with only metal3's and Argo's CRDs: what a site
// has before it installs this product (the chart's test installs the rest).
func StartThirdParty() (*Env, error) { return start(false, true, nil) }

// StartForPods starts the control plane (as Start) for a suite whose pods run on a real kubelet:
// the API server's certificate is also valid for the `kubernetes` Service's address
// (ServiceIP), which in-cluster clients dial, and the ServiceAccount admission plugin, which
// envtest turns off, mounts each pod's token. CA is the API server's CA (each namespace's
// kube-root-ca.crt). certDir is removed with the environment's owner (t.TempDir, say).
func StartForPods(certDir string) (*Env, error) {
	api, err := podServing(certDir)
	if err != nil {
		return nil, err
	}
	return start(true, true, api)
}

// ServiceIP is the `kubernetes` Service's address: the first of envtest's service range.
const ServiceIP = "10.0.0.1"

// podServing writes a serving certificate for localhost, 127.0.0.1 and ServiceIP and the
// service account signing key into certDir, where envtest takes them instead of its own.
func podServing(certDir string) (*envtest.APIServer, error) {
	chain, key, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(ServiceIP)}, nil)
	if err != nil {
		return nil, err
	}
	// The chain is the serving certificate, then the CA that signed it.
	certs, err := certutil.ParseCertsPEM(chain)
	if err != nil || len(certs) != 2 {
		return nil, fmt.Errorf("serving certificate chain: %d certificates, %v", len(certs), err)
	}
	ca, err := certutil.EncodeCertificates(certs[1])
	if err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	saPub := pem.EncodeToMemory(&pem.Block{Type: keyutil.PublicKeyBlockType, Bytes: pub})
	saPriv := pem.EncodeToMemory(&pem.Block{Type: keyutil.RSAPrivateKeyBlockType, Bytes: x509.MarshalPKCS1PrivateKey(saKey)})
	for name, data := range map[string][]byte{"apiserver.crt": chain, "apiserver.key": key, "sa-signer.crt": saPub, "sa-signer.key": saPriv} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	api := &envtest.APIServer{CertDir: certDir}
	api.CA = ca
	api.Configure().Set("disable-admission-plugins", "")
	// A test node's name does not resolve: `kubectl logs` reaches its kubelet by address.
	api.Configure().Set("kubelet-preferred-address-types", "InternalIP")
	return api, nil
}

func start(ours, argo bool, api *envtest.APIServer) (*Env, error) {
	root := RepoRoot()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s")
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return nil, fmt.Errorf("the local control plane is not built (%s missing in %s): run `make test-deps` or hack/control-plane.sh", b, assets)
		}
	}
	crds := []string{filepath.Join(root, "config", "thirdparty", "metal3")}
	if argo {
		crds = append(crds, filepath.Join(root, "config", "thirdparty", "argo"))
	}
	if ours {
		crds = append([]string{filepath.Join(root, "config", "crd", "bases")}, crds...)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crds,
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme.New(),
	}
	if api != nil {
		env.ControlPlane.APIServer = api
	}
	cfg, err := env.Start()
	if err != nil {
		// envtest leaves etcd and kube-apiserver running when Start fails half-way (a bad
		// CRD, say): stop them here, or machines fill with orphans.
		return nil, errors.Join(fmt.Errorf("starting the control plane: %w", err), env.Stop())
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	if ours {
		// The admission policies are part of the API, as on a real install.
		if err := Apply(context.Background(), c, filepath.Join(root, "config", "policy", "cluster-label.yaml")); err != nil {
			return nil, errors.Join(err, env.Stop())
		}
	}
	return &Env{Environment: env, Config: cfg, Client: c}, nil
}

// Apply creates every object of a multi-document YAML file.
func Apply(ctx context.Context, c client.Client, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("%s: creating %s %s: %w", path, obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// ForTest starts a control plane with start (Start, StartWithoutArgo, StartThirdParty) for t
// alone, and stops it when t ends or the test process is interrupted, so that no etcd or
// kube-apiserver outlives its test.
func ForTest(t testing.TB, start func() (*Env, error)) *Env {
	t.Helper()
	env, err := start()
	if err != nil {
		t.Fatal(err)
	}
	testinterrupt.Cleanup(t, func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	return env
}

// Main is the body of a TestMain that shares one control plane across a package's tests: it
// starts it into *env, runs the tests, stops it and exits with the tests' code.
func Main(m *testing.M, env **Env) {
	// A fuzzing worker runs only the fuzz target, which needs no control plane: starting one in
	// every worker process would stall the fuzzing.
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		os.Exit(m.Run())
	}
	e, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
	}
	os.Exit(code)
}

// AdminKubeconfig writes a kubeconfig of a system:masters user into the test's temporary
// directory and returns its path, for the tools a test runs (kubectl, helm, the controller).
func (e *Env) AdminKubeconfig(t testing.TB) string {
	t.Helper()
	admin, err := e.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(testinterrupt.TempDir(t), "admin.kubeconfig")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// UnansweredKubeconfig writes a copy of the kubeconfig at path whose every cluster is where
// nothing listens, and returns the copy's path: a cluster that does not answer.
func UnansweredKubeconfig(t testing.TB, path string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://127.0.0.1:1"
	}
	gone := filepath.Join(testinterrupt.TempDir(t), "unanswered.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, gone); err != nil {
		t.Fatal(err)
	}
	return gone
}

// GrantControllerRole binds each user to the controller's ClusterRole as `make manifests`
// generates it (config/rbac/role.yaml), and to nothing else, creating the ClusterRole once:
// a client acting as such a user is the controller as a site installs it, whose writes pass
// the API server's RBAC checks (the escalation check of every step Role and RoleBinding it
// writes), where a system:masters user skips them.
func GrantControllerRole(ctx context.Context, c client.Client, users ...string) error {
	role := &rbacv1.ClusterRole{}
	if err := ReadManifest(filepath.Join("config", "rbac", "role.yaml"), role); err != nil {
		return err
	}
	if err := c.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the controller's ClusterRole: %w", err)
	}
	for _, user := range users {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name + ":" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}
		if err := c.Create(ctx, binding); err != nil {
			return fmt.Errorf("binding %s to the controller's ClusterRole: %w", user, err)
		}
	}
	return nil
}

// ReadManifest reads the single-object YAML file at path (relative to the repository's root)
// into into, refusing fields into does not have.
func ReadManifest(path string, into any) error {
	raw, err := os.ReadFile(filepath.Join(RepoRoot(), path))
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
