package pod_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testsshd"
	pinhostkeyspod "github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/readcertificates/pod"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// realKubeadm makes a control plane's certificates with the real kubeadm (the control plane's
// own build) in a directory of its own, and returns a wrapper that runs that kubeadm on them,
// as kubespray's kubeadm runs on a master's /etc/kubernetes.
func realKubeadm(t *testing.T) string {
	t.Helper()
	kubeadm := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubeadm")
	if _, err := os.Stat(kubeadm); err != nil {
		t.Fatalf("kubeadm is not in KUBEBUILDER_ASSETS: run make test-deps, which builds it beside kube-apiserver")
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "kubeadm.yaml")
	if err := os.WriteFile(config, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncertificatesDir: "+filepath.Join(dir, "pki")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(kubeadm, "init", "phase", "certs", "all", "--config", config).CombinedOutput(); err != nil {
		t.Fatalf("kubeadm init phase certs all: %v\n%s", err, out)
	}
	wrapper := filepath.Join(dir, "kubeadm.sh")
	if err := os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nexec %s \"$@\" --config %s\n", kubeadm, config)), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// TestReadCertificatesOverSSH: over real SSH with the pinned key, the real kubeadm's
// check-expiration on each master; a master that cannot be read is said in its entry and does
// not fail the step; workers and leaving masters are not read; nothing secret is in the report.
func TestReadCertificatesOverSSH(t *testing.T) {
	sshd := testsshd.Start(t)
	kubeadm := realKubeadm(t)
	ns := env.Namespace(t)
	_, ref := env.Provisioning(t, "provisioning-cluster-abc.yaml", ns, "abc", ns)
	placed := []bpav1.Node{
		{Label: "master", Role: "master", BareMetalHost: "m/node-1", MAC: "00:c5:16:05:61:b2", IP: "127.0.0.1"},
		{Label: "master-2", Role: "master", BareMetalHost: "m/node-2", MAC: "00:c5:16:05:61:b3", IP: "127.0.0.2"},
		{Label: "master-3", Role: "master", BareMetalHost: "m/node-5", MAC: "00:c5:16:05:61:b5", IP: "127.0.0.5"},
		{Label: "worker-1", Role: "worker", BareMetalHost: "m/node-3", MAC: "00:c6:14:04:61:b2", IP: "127.0.0.3"},
	}
	if err := pinhostkeyspod.Run(ctx(), env.Client, ref, placed[:1], nil, sshd.Port, 10*time.Second, ""); err != nil {
		t.Fatal(err)
	}
	opts := stepcmd.SSHOptions{KeyFile: sshd.ClientKeyFile, Port: sshd.Port, Timeout: 5 * time.Second}
	run := pod.Run{User: testsshd.User(t), Kubeadm: kubeadm, Leaving: []string{"master-3"}}
	report, err := pod.Read(ctx(), env.Client, ref, placed, run, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Masters) != 2 || report.Masters[0].Node != "master" || report.Masters[1].Node != "master-2" {
		t.Fatalf("report %+v, want master and master-2 only", report)
	}
	m := report.Masters[0]
	if m.Unreadable != "" || len(m.Certificates) != 10 || m.Certificates[0].Name != "apiserver" {
		t.Errorf("master: %+v, want kubeadm's ten certificates, apiserver first", m)
	}
	if until := time.Until(m.Certificates[0].Expires.Time); until < 364*24*time.Hour || until > 366*24*time.Hour {
		t.Errorf("apiserver expires in %s, want kubeadm's year", until)
	}
	if un := report.Masters[1].Unreadable; !strings.Contains(un, "no host key is pinned for 127.0.0.2:") {
		t.Errorf("master-2: %q, want the reason it was not read", un)
	}
	st := report.Status()
	if st == nil || st.NextToExpire != "apiserver on master" {
		t.Errorf("status %+v", st)
	}
	raw := fmt.Sprintf("%+v", report)
	for _, secret := range []string{"PRIVATE KEY", string(sshd.ClientKeyPEM)} {
		if strings.Contains(raw, secret) {
			t.Errorf("the report holds a secret")
		}
	}
}
