package testkubespray

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// SlowNodes are the site-level settings kubespray offers for slow nodes, as a site of emulated
// servers (TCG, 15–30 times slower than the host) needs them: kubeadm init and join given
// longer than their defaults (300 s, 120 s, and 60 s of discovery), and the controller manager's
// and the scheduler's leader election four times kubespray's 15 s lease and 10 s renewal. With
// the defaults an emulated master answers the controller manager's lease renewal too late: it
// loses its lease and exits over and over, and no Deployment's status moves.
func SlowNodes() map[string]bpav1.ExtraVarValue {
	return map[string]bpav1.ExtraVarValue{
		"kubeadm_init_timeout": bpav1.ExtraVar("1800s"),
		"kubeadm_join_timeout": bpav1.ExtraVar("1200s"),
		"discovery_timeout":    bpav1.ExtraVar("600s"),
		"kube_controller_manager_leader_elect_lease_duration": bpav1.ExtraVar("60s"),
		"kube_controller_manager_leader_elect_renew_deadline": bpav1.ExtraVar("40s"),
		"kube_scheduler_leader_elect_lease_duration":          bpav1.ExtraVar("60s"),
		"kube_scheduler_leader_elect_renew_deadline":          bpav1.ExtraVar("40s"),
		// The API server's own limit on a request (kubespray's 1m0s): on an emulated master of
		// three nodes creating CoreDNS's Service outlasts it, and cluster.yml's apps play fails
		// with "request did not complete within requested timeout".
		"kube_apiserver_request_timeout":  bpav1.ExtraVar("3m0s"),
		"kubeadm_ignore_preflight_errors": bpav1.ExtraVar(KubeadmIgnoredPreflightErrors),
		// kubeadm lets the API server fail its liveness probe for 80 s (8 × 10 s) and take 4
		// minutes to start (24 × 10 s). An emulated master's /livez times out on and off for
		// longer, the kubelet kills a slow API server, and the one it starts, its handshakes
		// with etcd timing out, is killed in turn: a crash loop. kubespray's own kubeadm_patches
		// widen both windows.
		"kubeadm_patches": bpav1.ExtraVar(apiServerProbesPatch()),
		// kubespray's default (host_resolvconf) points the nodes' resolv.conf at the cluster's
		// DNS, and cluster.yml's last play then restarts the API server and the controller
		// manager so that they read it: one more restart of a starved API server, after which
		// sudo on the master cannot resolve the master's own name. The
		// site's DNS serves the nodes; the cluster's pods use the cluster's DNS in every mode.
		"resolvconf_mode": bpav1.ExtraVar("none"),
		// A master that joins bootstraps its kubelet's TLS against its own API server under
		// kubeadm's ControlPlaneKubeletLocalMode (beta, on by default since 1.33), and kubeadm
		// gives that 5 minutes (timeouts.tlsBootstrap, which kubespray's JoinConfiguration does
		// not set). An emulated master's new API server is not serving within them:
		// "kubelet-wait-bootstrap: failed while waiting for TLS bootstrap: context deadline
		// exceeded". With the gate off the kubelet bootstraps against the first master, as
		// kubeadm did through 1.32, within seconds. kubeadm reads the gate from the cluster's
		// kubeadm-config, which kubeadm init writes: it must be set when the cluster is
		// created, not when the master is added.
		"kubeadm_feature_gates": bpav1.ExtraVar([]string{"ControlPlaneKubeletLocalMode=false"}),
		// kubeadm's join of a master ends by waiting 4 minutes for the master's own control
		// plane (wait-control-plane, its last phase: timeouts.controlPlaneComponentHealthCheck,
		// which kubespray's JoinConfiguration does not set). An emulated master's API server
		// takes longer to become healthy: "wait-control-plane: ... kube-apiserver check failed
		// at https://ADDRESS:6443/livez: ... context deadline exceeded", with every change of the
		// join already made, and kubespray's retries of the join then fail kubeadm's preflight
		// on those changes. Without the wait the join ends there; kubespray waits for the master's API
		// server itself, in its control-plane handler, control_plane_health_retries times a
		// second apart (60 by default) after it points the master's kubelet at it.
		"kubeadm_join_phases_skip":     bpav1.ExtraVar(KubeadmJoinSkippedPhases),
		"control_plane_health_retries": bpav1.ExtraVar(ControlPlaneHealthRetries),
		// kubespray's kubectl command, which most of its plays run on the first master, with
		// a longer limit on each request. Without one, kubectl gives the API server 32 s to
		// send its OpenAPI document (client-go's discovery default), which kubectl apply reads
		// to validate what it applies. A saturated first master takes longer while a master
		// joins, and cluster.yml fails in its apps play: "failed to download openapi ...
		// Client.Timeout exceeded". The
		// command is kubespray's default with its default bin_dir and kube_config_dir written
		// out, since an extra variable may not hold Jinja2.
		"kubectl": bpav1.ExtraVar(KubesprayKubectl + " --request-timeout=" + KubectlRequestTimeout.String()),
	}
}

// KubesprayKubectl is kubespray's kubectl command (its variable kubectl) with its default
// bin_dir and kube_config_dir.
const KubesprayKubectl = "/usr/local/bin/kubectl --kubeconfig /etc/kubernetes/admin.conf"

// KubectlRequestTimeout is the slow-node settings' limit on each of kubespray's kubectl
// requests: longer than the API server's own (kube_apiserver_request_timeout), so that the API
// server, not kubectl, says when a request took too long.
const KubectlRequestTimeout = 5 * time.Minute

// KubeadmJoinSkippedPhases are the slow-node settings' kubeadm_join_phases_skip: kubeadm's
// last phase of a join, its wait for the master's own control plane (SlowNodes says why).
var KubeadmJoinSkippedPhases = []string{lastJoinPhase}

// ControlPlaneHealthRetries is the slow-node settings' control_plane_health_retries, the tries
// (a second apart) of kubespray's wait for a master's API server, scheduler and controller
// manager: 10 minutes and more, where kubespray's 60 give a minute; a joining master's API
// server on the test site takes minutes from its kubelet's start to healthy.
const ControlPlaneHealthRetries = 600

// KubeadmIgnoredPreflightErrors are the slow-node settings' kubeadm_ignore_preflight_errors.
//   - CreateJob: kubeadm upgrade apply's preflight runs a Job that must complete in 15 s; on the
//     emulated master it did not, and the renewal's upgrade failed there (make e2e-cluster).
//   - Port-6443, Port-10257, Port-10259: kubeadm init waits 4 minutes for the control plane
//     (its timeouts.controlPlaneComponentHealthCheck, which kubespray's InitConfiguration does
//     not set). On the emulated master the API server was not healthy in that time, and
//     kubespray's own retry of kubeadm init then failed its preflight: the first try's
//     controller manager and scheduler held their ports, and kubespray's retry makes only the
//     manifests and the kubelet's port warnings, and Argo's retry runs cluster.yml again.
//     With these, kubespray's retries find the first try's components running and wait for
//     them again, as kubespray's retry did when it ignored every preflight error.
var KubeadmIgnoredPreflightErrors = []string{"CreateJob", "Port-6443", "Port-10257", "Port-10259"}

// How long the kubelet lets the emulated master's API server fail its liveness probe, and take
// to start, before it kills it (kubeadm's defaults: 80 s and 240 s): the test site's settings,
// not the product's; a site of real servers keeps kubeadm's.
const (
	APIServerLivenessWindow = 10 * time.Minute
	APIServerStartupWindow  = 15 * time.Minute
)

// kubeadmProbePeriod is the period of kubeadm's probes of the API server, set again by the
// patch so that the windows do not rest on kubeadm's default.
const kubeadmProbePeriod = 10 * time.Second

// apiServerProbesPatch is kubespray's kubeadm_patches for the API server's probes: a strategic
// merge patch of kubeadm's static Pod, which kubespray writes under /etc/kubernetes/patches
// and kubeadm applies to the manifest it writes, at init and at every upgrade.
func apiServerProbesPatch() []map[string]any {
	probe := func(window time.Duration) map[string]any {
		return map[string]any{"periodSeconds": int(kubeadmProbePeriod.Seconds()), "failureThreshold": int(window / kubeadmProbePeriod)}
	}
	return []map[string]any{{
		"target": "kube-apiserver",
		"type":   "strategic",
		"patch": map[string]any{"spec": map[string]any{"containers": []map[string]any{{
			"name":          "kube-apiserver",
			"livenessProbe": probe(APIServerLivenessWindow),
			"startupProbe":  probe(APIServerStartupWindow),
		}}}},
	}}
}

// NodesWait bounds how long WaitForNodes waits after kubespray ends.
const NodesWait = 15 * time.Minute

// WaitForNodes waits up to NodesWait for the cluster's nodes to be exactly names, every one
// Ready, with CoreDNS available, and returns what it saw; when says, in a failure, where the
// test was.
func WaitForNodes(t *testing.T, cluster kubernetes.Interface, when string, names ...string) string {
	t.Helper()
	var last string
	deadline := time.Now().Add(NodesWait)
	for {
		last = ClusterState(context.Background(), cluster, names)
		if strings.HasPrefix(last, "ready") || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Second)
	}
	if !strings.HasPrefix(last, "ready") {
		t.Fatalf("%s the cluster is not %v Ready within %s: %s", when, names, NodesWait, last)
	}
	return last
}

// ClusterState is "ready: ..." once the nodes are exactly names, all Ready, and CoreDNS has an
// available replica, else what is not yet.
func ClusterState(ctx context.Context, c kubernetes.Interface, names []string) string {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "listing nodes: " + err.Error()
	}
	var states, have []string
	ready := 0
	for _, n := range nodes.Items {
		have = append(have, n.Name)
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
	summary := strings.Join(states, ", ") + "; " + coredns + controlPlaneTrouble(ctx, c)
	slices.Sort(have)
	if ready == len(names) && slices.Equal(have, slices.Sorted(slices.Values(names))) && err == nil && dns.Status.AvailableReplicas > 0 {
		return "ready: " + summary
	}
	return summary
}

// controlPlaneTrouble is "; kube-system: POD why, ..." for the kube-system pods that are not
// Ready or have restarted: a Deployment's status stays where it was while the controller
// manager restarts, and "CoreDNS 0/2 available" alone hid that its pods ran.
func controlPlaneTrouble(ctx context.Context, c kubernetes.Interface) string {
	pods, err := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "; kube-system's pods: " + err.Error()
	}
	var trouble []string
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready && cs.RestartCount == 0 {
				continue
			}
			why := "not ready"
			if cs.Ready {
				why = "ready"
			}
			if w := cs.State.Waiting; w != nil {
				why = w.Reason
			}
			if t := cs.LastTerminationState.Terminated; t != nil && cs.RestartCount > 0 {
				why += fmt.Sprintf(", %d restarts, last %s (exit %d)", cs.RestartCount, t.Reason, t.ExitCode)
			}
			trouble = append(trouble, p.Name+" "+why)
		}
	}
	if len(trouble) == 0 {
		return ""
	}
	slices.Sort(trouble)
	return "; kube-system: " + strings.Join(trouble, ", ")
}
