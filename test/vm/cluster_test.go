//go:build vm

package vm_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/testvm"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/fetchkubeconfig"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
)

// slowNodes are the site-level settings kubespray offers for slow nodes, as a site of
// emulated servers (TCG, 15–30 times slower than the host) needs them: kubeadm init and join
// given longer than their defaults (300 s, 120 s, and 60 s of discovery).
var slowNodes = map[string]bpav1.ExtraVarValue{
	"kubeadm_init_timeout": bpav1.ExtraVar("1800s"),
	"kubeadm_join_timeout": bpav1.ExtraVar("1200s"),
	"discovery_timeout":    bpav1.ExtraVar("600s"),
}

// TestRealClusterOnVirtualMachines: the real kubespray's whole cluster.yml installs Kubernetes
// on the site's machines, offline from the site's mirror (everything it downloads built here,
// uploaded with the product's upload commands, served by its file server), run as
// run-kubespray runs it; fetch-kubeconfig stores the real admin kubeconfig, and through it
// every node is Ready and CoreDNS answers. Under TCG this takes the better part of an hour:
// make e2e-cluster runs it (BPA_REAL_CLUSTER=1), make test does not.
func TestRealClusterOnVirtualMachines(t *testing.T) {
	if os.Getenv("BPA_REAL_CLUSTER") == "" {
		t.Skip("a whole cluster.yml on emulated machines takes the better part of an hour: make e2e-cluster runs it (BPA_REAL_CLUSTER=1)")
	}
	built := os.Getenv("BPA_KUBESPRAY_DOWNLOADS")
	if built == "" || os.Getenv("BPA_KUBESPRAY_IMAGES") == "" {
		t.Skip("kubespray's image or its downloads are not built: ../shared/third_party is absent (make e2e-cluster builds them when it is there)")
	}
	start := time.Now()
	s := startVMSite(t, "10.254.0", testvm.Spec{Name: "vm-master", CPUs: 2, MemoryMiB: 3072}, testvm.Spec{Name: "vm-worker", CPUs: 1, MemoryMiB: 2048}, slowNodes,
		// Kubernetes' network plugin finds its interface by the default route.
		testvm.WithGateway())
	ctx := context.Background()
	online, onlineVars, err := renderinventory.Run(ctx, s.env.Client, s.ref, s.addressed, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.servePackagesKubesprayInstalls(t, online, onlineVars)
	mirror := serveKubesprayDownloads(t, s.site, built)
	inventory, extraVars := renderOffline(t, s.p, s.addressed, mirror, built)
	t.Logf("the site is ready for kubespray in %.0f s: the machines booted, placed, addressed, their keys pinned; its mirror serves kubespray's packages, files and images", time.Since(start).Seconds())

	out := runRealKubespray(t, s.env, s.ns, s.p, inventory, extraVars, s.keyFile, kubesprayRun{Playbook: "cluster.yml", MayFail: true})
	for _, host := range []string{"master", "worker"} {
		if !okRecap(out, host) {
			t.Fatalf("the real cluster.yml on %s:\n%s\n%s", host, failuresOf(out), lastLinesOf(out, 30))
		}
	}

	// fetch-kubeconfig: the real admin.conf kubeadm wrote on the master, through sudo.
	run := fetchkubeconfig.KubeconfigRun{Master: "master", User: testvm.AdminUser}
	if err := fetchkubeconfig.Run(ctx, s.env.Client, s.ref, run, s.addressed, fetchkubeconfig.DefaultAdminConf, s.sshOpts); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{}
	if err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "cluster-abc-kubeconfig"}, sec); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(sec.Data[bpav1.KubeconfigSecretKey])
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://" + s.master.IP + ":6443"; cfg.Host != want {
		t.Errorf("the stored kubeconfig reaches %s, want %s", cfg.Host, want)
	}
	cfg.Timeout = 30 * time.Second
	cluster, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	deadline := time.Now().Add(15 * time.Minute)
	for {
		last = clusterState(ctx, cluster)
		if strings.HasPrefix(last, "ready") || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Second)
	}
	if !strings.HasPrefix(last, "ready") {
		t.Fatalf("through the stored kubeconfig, the cluster is not ready 15 minutes after cluster.yml: %s", last)
	}
	t.Logf("the real cluster, apply to Ready: %.0f s in all; through the stored kubeconfig: %s", time.Since(start).Seconds(), last)
}

// okRecap says whether ansible-playbook's recap has host at ok, unreachable and failed 0.
func okRecap(out, host string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[0] == host && f[1] == ":" && strings.HasPrefix(f[2], "ok=") && f[2] != "ok=0" &&
			slices.Contains(f, "unreachable=0") && slices.Contains(f, "failed=0") {
			return true
		}
	}
	return false
}

// clusterState is "ready: ..." once both nodes are Ready and CoreDNS has an available
// replica, else what is not yet.
func clusterState(ctx context.Context, c kubernetes.Interface) string {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "listing nodes: " + err.Error()
	}
	var states []string
	ready := 0
	for _, n := range nodes.Items {
		state := "NotReady"
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				state, ready = "Ready", ready+1
			}
		}
		states = append(states, fmt.Sprintf("%s %s (%s)", n.Name, state, n.Status.NodeInfo.KubeletVersion))
	}
	slices.Sort(states)
	dns, err := c.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	coredns := "CoreDNS: " + fmt.Sprint(err)
	if err == nil {
		coredns = fmt.Sprintf("CoreDNS %d/%d available", dns.Status.AvailableReplicas, dns.Status.Replicas)
	}
	summary := strings.Join(states, ", ") + "; " + coredns
	if ready == 2 && len(nodes.Items) == 2 && err == nil && dns.Status.AvailableReplicas > 0 {
		return "ready: " + summary
	}
	return summary
}
