// Package charts_test checks the Helm chart with helm itself (built from its module by
// hack/control-plane.sh): lint, templates against golden files, the same object set as
// `kubectl apply -k config/default`, and a real install into a local API server after which the
// controller, run with the installed Deployment's arguments and the installed ServiceAccount's
// token (not an admin), reconciles a sample Provisioning.
package charts_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/cli"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/golden"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
)

const (
	release   = "bpa"
	namespace = "bpa-system"
)

var chart = filepath.Join(testenv.RepoRoot(), "charts", "bpa-workflow-controller")

func tool(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(testenv.RepoRoot(), "bin", "k8s", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not built: run `make test-deps` (hack/control-plane.sh)", name)
	}
	return p
}

// helm runs helm with its own empty configuration and cache, so nothing of the machine's user
// (repositories, plugins, contexts) changes what it does.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(tool(t, "helm"), args...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home+"/config", "HELM_CACHE_HOME="+home+"/cache",
		"HELM_DATA_HOME="+home+"/data")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

func TestChartLints(t *testing.T) {
	for _, values := range [][]string{nil, {"--values", "testdata/site-values.yaml"}} {
		if out, err := helm(t, append([]string{"lint", "--strict", chart}, values...)...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// TestChartTemplates renders the chart with its defaults and with a site's values against
// golden files (run with -update to rewrite them). The CRDs are left out: make verify keeps
// crds/ identical to config/crd/bases.
func TestChartTemplates(t *testing.T) {
	for name, values := range map[string][]string{
		"default.yaml": nil,
		"site.yaml":    {"--values", "testdata/site-values.yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := helm(t, append([]string{"template", release, chart, "--namespace", namespace}, values...)...)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, name, maskGenerated(out))
		})
	}
}

// maskGenerated replaces the values of the Secrets the chart makes (a random password, a new
// CA) with a placeholder, so the golden files compare the rest.
func maskGenerated(raw []byte) []byte {
	docs := strings.Split(string(raw), "\n---")
	for i, doc := range docs {
		if !strings.Contains(doc, `bpa.akraino.org/generated: "true"`) {
			continue
		}
		lines := strings.Split(doc, "\n")
		inData := false
		for j, line := range lines {
			switch {
			case line == "data:":
				inData = true
			case inData && strings.HasPrefix(line, "  "):
				key, _, _ := strings.Cut(strings.TrimSpace(line), ":")
				lines[j] = "  " + key + ": <generated>"
			default:
				inData = false
			}
		}
		docs[i] = strings.Join(lines, "\n")
	}
	return []byte(strings.Join(docs, "\n---"))
}

// TestChartRefusesBadValues: values that would install something broken fail the render with
// a message naming the value.
func TestChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"replicas=2", "leaderElection=false"}, "replicas > 1 needs leaderElection: true"},
		{[]string{"leases.file=/var/lib/dhcp/dhcpd.leases", "leases.format=kea"}, `leases.format "kea": want isc or dnsmasq`},
		{[]string{"leases.nodeSelector.dhcp=true"}, "leases.nodeSelector without leases.file selects nothing"},
		{[]string{"retention.podGC=Never"}, `retention.podGC "Never": want OnPodSuccess`},
		{[]string{"retention.failureSeconds=-1"}, "retention.successSeconds and failureSeconds may not be negative"},
		{[]string{"metrics.service.enabled=false", "metrics.serviceMonitor.enabled=true"}, "metrics.serviceMonitor needs metrics.service.enabled"},
		{[]string{"siteRegistry.mode=harbor"}, `siteRegistry.mode "harbor": want deploy, external or none`},
		{[]string{"siteRegistry.mode=external"}, "siteRegistry.mode external needs siteRegistry.external.address"},
		{[]string{"siteRegistry.mode=external", "siteRegistry.external.address=harbor.site.example/bpa"}, "needs siteRegistry.auth.secretName"},
		{[]string{"siteRegistry.maxUploadSize=lots"}, `siteRegistry.maxUploadSize "lots": want a size such as 32Gi`},
		{[]string{"offline.enabled=true"}, "offline.mirrorURL: name the file server as the nodes reach it"},
		{[]string{"argoUI.url=argo.site.example"}, `argoUI.url "argo.site.example": want http(s)://host[:port][/base-href]`},
		{[]string{"argoUI.url=https://admin:pw@argo.site.example"}, "without credentials, query or fragment"},
		{[]string{"offline.enabled=true", "offline.mirrorURL=http://10.10.0.2:30580", "siteRegistry.mode=none"}, "siteRegistry.mode may not be none"},
	} {
		t.Run(strings.Join(tc.set, ","), func(t *testing.T) {
			args := []string{"template", release, chart}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			_, err := helm(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// objectSet is "Kind namespace/name" of every object of a multi-document YAML stream.
func objectSet(t *testing.T, raw []byte) []string {
	t.Helper()
	var out []string
	for _, doc := range strings.Split(string(raw), "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if len(u.Object) == 0 || u.GetKind() == "Namespace" { // helm install --create-namespace makes it
			continue
		}
		out = append(out, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
	}
	slices.Sort(out)
	return out
}

// TestChartInstallsWhatKustomizeInstalls: `kubectl apply -k config/default` and the chart with
// its defaults install the same objects, but for the site registry, which only the chart
// deploys (kustomize cannot make its password and certificate).
func TestChartInstallsWhatKustomizeInstalls(t *testing.T) {
	fromHelm, err := helm(t, "template", release, chart, "--namespace", namespace, "--include-crds", "--set", "siteRegistry.mode=none")
	if err != nil {
		t.Fatal(err)
	}
	fromKustomize, err := exec.Command(tool(t, "kubectl"), "kustomize", filepath.Join(testenv.RepoRoot(), "config", "default")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/default: %v", err)
	}
	h, k := objectSet(t, fromHelm), objectSet(t, fromKustomize)
	if !slices.Equal(h, k) {
		t.Fatalf("the chart installs:\n  %s\nconfig/default installs:\n  %s", strings.Join(h, "\n  "), strings.Join(k, "\n  "))
	}
	t.Logf("both install %d objects", len(h))
}

// TestChartInstallRunsTheController installs the chart into a local API server that has only
// metal3's and Argo's CRDs, as a site has before, then runs the controller as the chart's
// Deployment would: its arguments, the chart's ServiceAccount's token. A sample Provisioning
// becomes a Workflow, with the cluster's step identity written (RBAC lets the controller grant
// only what the chart gave it).
func TestChartInstallRunsTheController(t *testing.T) {
	env := testenv.ForTest(t, testenv.StartThirdParty)
	adminPath := env.AdminKubeconfig(t)
	dir := t.TempDir()
	start := time.Now()
	if out, err := helm(t, "install", release, chart, "--namespace", namespace, "--create-namespace", "--kubeconfig", adminPath); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("helm install took %s", time.Since(start).Round(time.Millisecond))
	manifest, err := helm(t, "get", "manifest", release, "--namespace", namespace, "--kubeconfig", adminPath)
	if err != nil {
		t.Fatal(err)
	}
	crds, _ := filepath.Glob(filepath.Join(chart, "crds", "*.yaml"))
	t.Logf("installed: %d objects from templates and %d CRDs", len(objectSet(t, manifest)), len(crds))

	ctx := context.Background()
	c := env.Client

	// The site registry's account and certificate are made once: an upgrade keeps them, or
	// every node and script configured with them would break.
	generated := func() map[string][]byte {
		out := map[string][]byte{}
		for _, name := range []string{"bpa-workflow-controller-registry-auth", "bpa-workflow-controller-registry-tls"} {
			var s corev1.Secret
			if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
				t.Fatalf("the chart made no Secret %s: %v", name, err)
			}
			for k, v := range s.Data {
				out[name+"/"+k] = v
			}
		}
		return out
	}
	before := generated()
	if out, err := helm(t, "upgrade", release, chart, "--namespace", namespace, "--kubeconfig", adminPath, "--set", "logLevel=debug"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	after := generated()
	if len(before) != 7 || len(after) != len(before) { // username, password, htpasswd, http-secret; tls.crt, tls.key, ca.crt
		t.Fatalf("generated keys: %d before the upgrade, %d after", len(before), len(after))
	}
	for k, v := range before {
		if !bytes.Equal(after[k], v) {
			t.Errorf("helm upgrade changed %s", k)
		}
	}
	var crd unstructured.Unstructured
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := c.Get(ctx, client.ObjectKey{Name: "provisionings.bpa.akraino.org"}, &crd); err != nil {
		t.Fatalf("the chart did not install our CRDs: %v", err)
	}
	var templates wfv1.WorkflowTemplateList
	if err := c.List(ctx, &templates, client.InNamespace("default")); err != nil || len(templates.Items) == 0 {
		t.Fatalf("no plugin WorkflowTemplates in default: %v", err)
	}

	// The controller's credentials: a token of the chart's ServiceAccount.
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "bpa-workflow-controller",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saPath := filepath.Join(dir, "sa.kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	kc.AuthInfos["controller"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["controller"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "controller", Namespace: namespace}
	kc.CurrentContext = "controller"
	if err := clientcmd.WriteToFile(*kc, saPath); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", saPath)

	var deploy appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "bpa-workflow-controller"}, &deploy); err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(deploy.Spec.Template.Spec.Containers[0].Args)
	// What the pod has and this test does not: its own network (the test serves on loopback)
	// and its namespace file (the leader election lease's namespace).
	args = append(args, "--metrics-bind-address="+testutil.FreePort(t), "--health-probe-bind-address="+testutil.FreePort(t),
		"--leader-election-namespace="+namespace)
	// And the site registry's CA and account, which the pod mounts from the chart's Secrets.
	var tlsSecret, authSecret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "bpa-workflow-controller-registry-tls"}, &tlsSecret); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "bpa-workflow-controller-registry-auth"}, &authSecret); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "registry-ca.crt")
	if err := os.WriteFile(caFile, tlsSecret.Data["ca.crt"], 0o600); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(args, "--site-registry-ca-file=/etc/bpa/site-registry/ca.crt") {
		t.Fatalf("the Deployment does not give the manager the site registry's CA: %v", args)
	}
	args = append(args, "--site-registry-ca-file="+caFile)
	t.Setenv("BPA_REGISTRY_USERNAME", string(authSecret.Data["username"]))
	t.Setenv("BPA_REGISTRY_PASSWORD", string(authSecret.Data["password"]))
	// Each CR namespace of values.namespaces gets the account and CA install-software reads with.
	var nsSecret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "bpa-site-registry"}, &nsSecret); err != nil {
		t.Fatalf("no site registry Secret in the CR namespace: %v", err)
	}
	if !bytes.Equal(nsSecret.Data["password"], authSecret.Data["password"]) || !bytes.Equal(nsSecret.Data["ca.crt"], tlsSecret.Data["ca.crt"]) {
		t.Error("the CR namespace's site registry Secret is not the registry's account and CA")
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	var log testutil.SyncBuffer
	go func() { done <- cli.ExecuteContext(runCtx, args, io.Discard, &log) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("the controller did not stop within 30 s")
		}
		if t.Failed() {
			t.Logf("controller log:\n%s", log.String())
		}
	})

	p := testutil.Provisioning(t, "provisioning-cluster-abc.yaml")
	p.Namespace = "default"
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	testutil.Within(t, "the Provisioning becomes a Workflow, its status says so", func() error {
		var list wfv1.WorkflowList
		if err := c.List(ctx, &list, client.InNamespace("default")); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d Workflows", len(list.Items))
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if p.Status.WorkflowName != list.Items[0].Name {
			return fmt.Errorf("status.workflowName %q, Workflow %s", p.Status.WorkflowName, list.Items[0].Name)
		}
		return nil
	})
	var sa corev1.ServiceAccount
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "bpa-step-cluster-abc"}, &sa); err != nil {
		t.Errorf("the step identity was not written: %v", err)
	}
	if strings.Contains(log.String(), "forbidden") {
		t.Errorf("the controller was refused something with the chart's RBAC:\n%s", log.String())
	}
}
