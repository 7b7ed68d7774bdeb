package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/controller"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manager"
)

// fakeLogs serves a pod's log as a test sets it, and counts the reads.
type fakeLogs struct {
	mu    sync.Mutex
	logs  map[string]string
	reads []string
}

func (f *fakeLogs) Tail(_ context.Context, namespace, pod, container string, _ int64, _ int) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, namespace+"/"+pod+"/"+container)
	log, ok := f.logs[pod]
	if !ok {
		return nil, fmt.Errorf("pods %q not found", pod)
	}
	return []byte(log), nil
}

func (f *fakeLogs) set(pod, log string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs[pod] = log
}

func (f *fakeLogs) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reads)
}

// fakeClock is a time a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestProvisioningShowsKubesprayProgress: the status links the Workflow in Argo's UI; while
// run-kubespray runs, it says where its playbook is, from the progress lines on the step's log; the log is read at most once per
// KubesprayProgressInterval, the status written only when the progress changed, and the field
// is gone once the step has ended.
func TestProvisioningShowsKubesprayProgress(t *testing.T) {
	ns := newNamespace(t)
	logs := &fakeLogs{logs: map[string]string{}}
	clock := &fakeClock{now: time.Now()}
	startManagerWith(t, env.Config, func(o *manager.Options) {
		o.PodLogs, o.Clock, o.ArgoUI = logs, clock.Now, "https://argo.site.example/argo"
	})
	p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	create(t, p)
	wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)

	now := time.Now()
	kubespray := node(wf.Name, "run-kubespray", wfv1.NodeRunning, now, nil)
	kubespray.FinishedAt = metav1.Time{}
	pod := wf.Name + "-run-kubespray-" + fnv32a(kubespray.Name)
	logs.set(pod, "PLAY [Check Ansible version] ***\n"+
		`bpa-progress: {"done":3,"failed":[],"play":"Install etcd","playbook":"cluster.yml","plays":31,"task":"etcd : Check if etcd cluster is healthy","tasks":212,"unreachable":["worker-2"]}`+"\n"+
		"ok: [master]\n")
	progress := func(p string) func(*wfv1.WorkflowStatus) {
		return func(st *wfv1.WorkflowStatus) {
			st.Phase, st.Progress = wfv1.WorkflowRunning, wfv1.Progress(p)
			st.StartedAt = metav1.NewTime(now)
			st.Nodes = wfv1.Nodes{kubespray.ID: kubespray}
		}
	}
	setWorkflowStatus(t, wf, progress("3/8"))

	want := &bpav1.KubesprayProgress{
		Step: "run-kubespray", Summary: "run-kubespray: cluster.yml 3/31 plays: etcd : Check if etcd cluster is healthy (unreachable: worker-2)",
		Playbook: "cluster.yml", PlaysDone: 3, Plays: 31, Play: "Install etcd", Task: "etcd : Check if etcd cluster is healthy",
		TasksStarted: 212, UnreachableHosts: []string{"worker-2"},
	}
	var seen *bpav1.Provisioning
	eventually(t, "status.kubespray from the step's log", func() error {
		seen = getProvisioning(t, p)
		if diff := cmp.Diff(want, seen.Status.Kubespray); diff != "" {
			return fmt.Errorf("(-want +got):\n%s", diff)
		}
		return nil
	})
	if want := "https://argo.site.example/argo/workflows/" + ns + "/" + wf.Name; seen.Status.WorkflowURL != want {
		t.Errorf("status.workflowURL %q, want %q", seen.Status.WorkflowURL, want)
	}
	if got := logs.reads[0]; got != ns+"/"+pod+"/main" {
		t.Errorf("read the log of %s, want %s/%s/main", got, ns, pod)
	}

	// Within the interval: the Workflow moves, the log is not read again.
	reads := logs.count()
	logs.set(pod, `bpa-progress: {"done":4,"failed":[],"play":"Install Kubernetes","playbook":"cluster.yml","plays":31,"task":"","tasks":230,"unreachable":[]}`+"\n")
	setWorkflowStatus(t, wf, progress("3/9"))
	eventually(t, "the Workflow's progress mirrored", func() error {
		if got := getProvisioning(t, p).Status.Progress; got != "3/9" {
			return fmt.Errorf("progress %q", got)
		}
		return nil
	})
	if got := logs.count(); got != reads {
		t.Errorf("the log was read %d times more within %s", got-reads, controller.KubesprayProgressInterval)
	}
	if got := getProvisioning(t, p).Status.Kubespray; !cmp.Equal(got, want) {
		t.Errorf("status.kubespray changed within the interval: %+v", got)
	}

	// After it: read again, written once.
	clock.add(controller.KubesprayProgressInterval)
	setWorkflowStatus(t, wf, progress("3/10"))
	eventually(t, "the next play in the status", func() error {
		if got := getProvisioning(t, p).Status.Kubespray; got == nil || got.PlaysDone != 4 || got.Summary != "run-kubespray: cluster.yml 4/31 plays: Install Kubernetes" {
			return fmt.Errorf("status.kubespray %+v", got)
		}
		return nil
	})

	// The same progress read again writes nothing.
	rv := getProvisioning(t, p).ResourceVersion
	reads = logs.count()
	clock.add(controller.KubesprayProgressInterval)
	setWorkflowStatus(t, wf, progress("3/10"))
	eventually(t, "another read", func() error {
		if logs.count() == reads {
			return fmt.Errorf("not read yet")
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond)
	if got := getProvisioning(t, p).ResourceVersion; got != rv {
		t.Errorf("the Provisioning was written (resourceVersion %s to %s) with its progress unchanged", rv, got)
	}

	// The step ended: no field.
	setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) {
		done := kubespray
		done.Phase, done.FinishedAt = wfv1.NodeSucceeded, metav1.Now()
		st.Nodes = wfv1.Nodes{done.ID: done}
	})
	eventually(t, "status.kubespray gone", func() error {
		if got := getProvisioning(t, p).Status.Kubespray; got != nil {
			return fmt.Errorf("status.kubespray %+v", got)
		}
		return nil
	})
}

// fnv32a is FNV-1a of s, as Argo hashes a node's name into its pod's.
func fnv32a(s string) string {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return fmt.Sprint(h)
}
