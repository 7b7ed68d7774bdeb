package pod_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/fetchkubeconfig/pod"
	pinhostkeyspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// adminConf is what kubespray leaves on a master: the server is the master's own endpoint, the
// CA the cluster's, and the credentials are the secret the step must never show.
var adminConf = testutil.AdminConf(`
    token: ` + secretToken)

const secretToken = "s3cr3t-t0ken-never-printed"

// abcRun is what the Workflow of cluster-abc passes fetch-kubeconfig.
var abcRun = pod.KubeconfigRun{Master: "master", User: "root"}

func abcPlaced(ip string) []bpav1.Node {
	return []bpav1.Node{
		{Label: "master", Role: "master", BareMetalHost: "m/node-1", MAC: "00:c5:16:05:61:b2", IP: ip},
		{Label: "worker-1", Role: "worker", BareMetalHost: "m/node-3", MAC: "00:c6:14:04:61:b2", IP: "192.0.2.13"},
		{Label: "worker-2", Role: "worker", BareMetalHost: "m/node-4", MAC: "00:c2:12:03:62:b2", IP: "192.0.2.14"},
	}
}

func TestFetchKubeconfigOverSSH(t *testing.T) {
	sshd := testsshd.Start(t)
	ns := env.Namespace(t)
	p, ref := env.Provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	conf := filepath.Join(t.TempDir(), "admin.conf")
	if err := os.WriteFile(conf, []byte(adminConf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := stepcmd.SSHOptions{KeyFile: sshd.ClientKeyFile, Port: sshd.Port, Timeout: 10 * time.Second}
	if err := pod.Run(ctx(), env.Client, ref, abcRun, abcPlaced("127.0.0.1"), conf, opts); err == nil ||
		!strings.Contains(err.Error(), "no host key is pinned for 127.0.0.1:"+strconv.Itoa(sshd.Port)) || steps.IsRetryable(err) {
		t.Fatalf("before pin-host-keys: %v; want a final refusal naming the unpinned address", err)
	}
	if err := pinhostkeyspod.Run(ctx(), env.Client, ref, abcPlaced("127.0.0.1")[:1], nil, sshd.Port, 10*time.Second, ""); err != nil {
		t.Fatal(err)
	}

	if err := pod.Run(ctx(), env.Client, ref, abcRun, abcPlaced("127.0.0.1"), conf, opts); err != nil {
		t.Fatal(err)
	}

	sec := &corev1.Secret{}
	if err := env.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cluster-abc-kubeconfig"}, sec); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(sec.Data["value"])
	if err != nil {
		t.Fatalf("the stored kubeconfig does not parse: %v", err)
	}
	if got := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server; got != "https://127.0.0.1:8443" {
		t.Errorf("server = %s, want the master's IP with the original port", got)
	}
	if cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].Token != secretToken {
		t.Errorf("the credentials were not kept")
	}
	if ref := metav1.GetControllerOf(sec); ref != nil {
		t.Errorf("the Secret has a controller %v; want a plain owner reference", ref)
	}
	if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != p.UID {
		t.Errorf("Secret owners = %+v, want the Provisioning", sec.OwnerReferences)
	}

	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cluster-abc-hosts"}, cm); err != nil {
		t.Fatal(err)
	}
	var master bpav1.Node
	if err := json.Unmarshal([]byte(cm.Data["master"]), &master); err != nil || master.IP != "127.0.0.1" || master.Role != "master" || len(cm.Data) != 3 {
		t.Errorf("ConfigMap data = %v (%v)", cm.Data, err)
	}

	known := &corev1.Secret{}
	if err := env.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cluster-abc-known-hosts"}, known); err != nil {
		t.Fatal(err)
	}
	key := strings.ReplaceAll(sshd.Addr(), ":", "_")
	if got := string(known.Data[key]); got != string(ssh.MarshalAuthorizedKey(sshd.HostKey)) {
		t.Errorf("pinned %q for %s, want the server's host key", got, key)
	}
	if len(known.OwnerReferences) != 1 || known.OwnerReferences[0].UID != p.UID {
		t.Errorf("known-hosts owners %+v, want the Provisioning: the pins go with it", known.OwnerReferences)
	}

	t.Run("a retry with the same host key succeeds", func(t *testing.T) {
		if err := pod.Run(ctx(), env.Client, ref, abcRun, abcPlaced("127.0.0.1"), conf, opts); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a spec edited after kubespray ran: the step finishes the run as compiled", func(t *testing.T) {
		// The Workflow removed worker-2 at generation 1; meanwhile the spec moved on (the
		// first master renamed, another worker dropped). The step follows the Workflow: the
		// master it names, and only the leaving node left out of the hosts.
		cur := &bpav1.Provisioning{}
		if err := env.Client.Get(ctx(), client.ObjectKeyFromObject(p), cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.Masters = []bpav1.HostEntry{{"renamed": cur.Spec.Masters[0]["master"]}}
		cur.Spec.Workers = nil
		if err := env.Client.Update(ctx(), cur); err != nil {
			t.Fatal(err)
		}
		if cur.Generation == ref.Generation {
			t.Fatalf("the spec edit made no new generation")
		}
		// worker-2 was pinned when it joined.
		leavingAddr := "192.0.2.14:" + strconv.Itoa(sshd.Port)
		env.PinNodeAt(t, ns, leavingAddr, sshd.HostKey)
		run := abcRun
		run.Leaving = []string{"worker-2"}
		if err := pod.Run(ctx(), env.Client, ref, run, abcPlaced("127.0.0.1"), conf, opts); err != nil {
			t.Fatal(err)
		}
		known := &corev1.Secret{}
		if err := env.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cluster-abc-known-hosts"}, known); err != nil {
			t.Fatal(err)
		}
		if _, pinned := known.Data["192.0.2.14_"+strconv.Itoa(sshd.Port)]; pinned || strings.Contains(string(known.Data[steps.KnownHostsKey]), "192.0.2.14") {
			t.Errorf("the removed worker-2 is still pinned: %v", known.Data)
		}
		if _, pinned := known.Data[key]; !pinned {
			t.Errorf("the master's pin went with worker-2's")
		}
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "cluster-abc-hosts"}, cm); err != nil {
			t.Fatal(err)
		}
		if _, gone := cm.Data["worker-2"]; gone || cm.Data["master"] == "" || cm.Data["worker-1"] == "" {
			t.Errorf("hosts after a run removing worker-2 = %v; want master and worker-1", cm.Data)
		}
	})

	t.Run("a changed host key fails, saying so, and is not retried", func(t *testing.T) {
		sshd.RestartWithNewHostKey(t)
		err := pod.Run(ctx(), env.Client, ref, abcRun, abcPlaced("127.0.0.1"), conf, opts)
		if err == nil || !strings.Contains(err.Error(), "the host key of "+sshd.Addr()+" changed") || steps.IsRetryable(err) {
			t.Fatalf("%v; want a final host-key-changed error", err)
		}
		if !strings.Contains(err.Error(), ssh.FingerprintSHA256(sshd.HostKey)) {
			t.Errorf("the message does not show the presented key's fingerprint: %v", err)
		}
	})

	t.Run("a master that does not answer is retryable", func(t *testing.T) {
		closed := opts
		closed.Port = 1
		env.PinNode(t, ns, closed.Port, sshd.HostKey)
		err := pod.Run(ctx(), env.Client, ref, abcRun, abcPlaced("127.0.0.1"), conf, closed)
		if err == nil || !steps.IsRetryable(err) || !strings.Contains(err.Error(), `master "master"`) {
			t.Fatalf("%v; want a retryable error naming the master", err)
		}
	})

	t.Run("a missing admin.conf fails naming the file, not its content", func(t *testing.T) {
		fresh := testsshd.Start(t)
		freshOpts := stepcmd.SSHOptions{KeyFile: fresh.ClientKeyFile, Port: fresh.Port, Timeout: 10 * time.Second}
		_, otherRef := env.Provisioning(t, "provisioning-cluster-efg-kud-plugins.yaml", ns, "efg", ns)
		hosts := []bpav1.Node{{Label: "master-1", Role: "master,worker", BareMetalHost: "m/node-5", MAC: "00:e1:ba:ce:df:bd", IP: "127.0.0.1"}}
		if err := pinhostkeyspod.Run(ctx(), env.Client, otherRef, hosts, nil, fresh.Port, 10*time.Second, ""); err != nil {
			t.Fatal(err)
		}
		err := pod.Run(ctx(), env.Client, otherRef, pod.KubeconfigRun{Master: "master-1", User: "root"}, hosts, filepath.Join(t.TempDir(), "missing.conf"), freshOpts)
		var exit *sshexec.ExitError
		if err == nil || !strings.Contains(err.Error(), "missing.conf") || !errors.As(err, &exit) {
			t.Fatalf("%v; want the remote cat's failure", err)
		}
	})
}
