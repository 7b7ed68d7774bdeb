package controller

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/observe"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get

// KubesprayProgressInterval is how often a Provisioning whose Workflow runs kubespray reads
// the step's progress: at most one log read and one status write per CR per interval, and
// none when the progress is unchanged. Argo itself reports a step's progress once a minute
// (ARGO_PROGRESS_PATCH_TICK_DURATION); kubespray's long tasks (downloads, kubeadm, waits)
// take minutes, so half that interval shows each within 30 s, and a site running a hundred
// clusters at once costs the API server about three log reads a second.
const KubesprayProgressInterval = 30 * time.Second

// kubesprayLogTail bounds what one read takes of the step's log: the plugin writes its line
// at least at every long task's start, and a task's own output is rarely longer.
const (
	kubesprayLogTailLines = 400
	kubesprayLogMaxBytes  = 256 << 10
)

// PodLogs reads the end of a pod's container log.
type PodLogs interface {
	Tail(ctx context.Context, namespace, pod, container string, lines int64, maxBytes int) ([]byte, error)
}

// ClientPodLogs reads logs through the API server (pods/log), with the core group's client
// alone: a whole clientset would build a client for every group the controller never calls.
type ClientPodLogs struct{ Client corev1client.CoreV1Interface }

// Tail implements PodLogs.
func (c ClientPodLogs) Tail(ctx context.Context, namespace, pod, container string, lines int64, maxBytes int) ([]byte, error) {
	rc, err := c.Client.Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{
		Container: container, TailLines: ptr.To(lines), LimitBytes: ptr.To(int64(maxBytes)),
	}).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	return io.ReadAll(io.LimitReader(rc, int64(maxBytes)))
}

// progressReads remembers, per Provisioning, when its kubespray step's log was last read.
type progressReads struct {
	mu   sync.Mutex
	last map[types.UID]time.Time
}

// due says whether uid's step may be read now, and if not, how long until it may; a read
// it allows is counted as done.
func (r *progressReads) due(uid types.UID, now time.Time) (bool, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[types.UID]time.Time{}
	}
	if wait := KubesprayProgressInterval - now.Sub(r.last[uid]); wait > 0 {
		return false, wait
	}
	r.last[uid] = now
	return true, KubesprayProgressInterval
}

func (r *progressReads) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.last, uid)
}

// mirrorKubespray keeps status.kubespray: where the running kubespray step is, from the
// progress lines on its log. Nothing runs kubespray: no field. A read that fails keeps what the
// status had (the log of a pod that just started may not be served yet).
func (r *ProvisioningReconciler) mirrorKubespray(ctx context.Context, s *provisioningScope, running *observe.RunningKubespray) {
	p := s.p
	if running == nil || r.Logs == nil {
		p.Status.Kubespray = nil
		r.progress.forget(p.UID)
		return
	}
	if cur := p.Status.Kubespray; cur != nil && cur.Step != running.Step {
		p.Status.Kubespray = nil
	}
	due, wait := r.progress.due(p.UID, r.now())
	s.pollAfter = wait
	if !due {
		return
	}
	log, err := r.Logs.Tail(ctx, p.Namespace, running.Pod, "main", kubesprayLogTailLines, kubesprayLogMaxBytes)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Cannot read kubespray's progress yet", "pod", running.Pod, "error", err.Error())
		return
	}
	if got, ok := runkubespray.LastProgress(log); ok {
		p.Status.Kubespray = kubesprayStatus(running.Step, got)
	} else if p.Status.Kubespray == nil {
		p.Status.Kubespray = &bpav1.KubesprayProgress{Step: running.Step, Summary: "started: no play has begun"}
	}
}

// kubesprayStatus is a progress report as the status shows it.
func kubesprayStatus(step string, got runkubespray.Progress) *bpav1.KubesprayProgress {
	return &bpav1.KubesprayProgress{
		Step:             step,
		Summary:          fmt.Sprintf("%s: %s", step, got.Summary()),
		Playbook:         got.Playbook,
		PlaysDone:        got.Done,
		Plays:            got.Plays,
		Play:             got.Play,
		Task:             got.Task,
		TasksStarted:     got.Tasks,
		FailedHosts:      got.Failed,
		UnreachableHosts: got.Unreachable,
	}
}

func (r *ProvisioningReconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock()
	}
	return time.Now()
}
