//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testkubespray"
)

// stepLogs keeps the main container's log of every attempt of one step, each in a file of its
// own, followed through the API server while the attempt runs. Argo deletes a pod once it
// succeeds (the Workflows' podGC), and the kubelet its log with it: the attempts before a
// retry's success are read here once the Workflow has ended.
type stepLogs struct {
	t    *testing.T
	step string
	// node matches Argo's node names of the step's attempts.
	node *regexp.Regexp
	dir  string
	mu   sync.Mutex
	kept map[string]*keptLog // by pod name
}

// keptLog is one attempt's log: node is Argo's node name (workflow.step, or workflow.step(N)
// for a retry's attempt N), done is closed when the log has ended.
type keptLog struct {
	workflow, node, file string
	done                 chan struct{}
}

// keepStepLogs follows the step's pods from now until the test ends, into BPA_E2E_STEP_LOGS
// (make e2e-cluster's bin/e2e-cluster-step-logs), or into the suite's scratch space.
func (s *suite) keepStepLogs(step string) *stepLogs {
	t := s.t
	dir := os.Getenv("BPA_E2E_STEP_LOGS")
	if dir == "" {
		dir = filepath.Join(s.scratch, "step-logs")
	}
	must(t, os.MkdirAll(dir, 0o755))
	say(t, "%s's attempts, each log kept as it comes: %s", step, dir)
	cs, err := kubernetes.NewForConfig(s.env.Config)
	must(t, err)
	k := &stepLogs{t: t, step: step, node: regexp.MustCompile(`\.` + regexp.QuoteMeta(step) + `(\(\d+\))?$`), dir: dir, kept: map[string]*keptLog{}}
	c, stop := context.WithCancel(context.Background())
	var followers sync.WaitGroup
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for tick := time.NewTicker(time.Second); ; {
			k.followNew(c, cs, &followers)
			select {
			case <-c.Done():
				tick.Stop()
				return
			case <-tick.C:
			}
		}
	}()
	testinterrupt.Cleanup(t, func() { stop(); <-polled; followers.Wait() })
	return k
}

// followNew starts following each pod of the step whose main container has started.
func (k *stepLogs) followNew(c context.Context, cs kubernetes.Interface, followers *sync.WaitGroup) {
	pods, err := cs.CoreV1().Pods(namespace).List(c, metav1.ListOptions{LabelSelector: "workflows.argoproj.io/workflow"})
	if err != nil {
		return // the next tick asks again; the suite's API server is local
	}
	for _, p := range pods.Items {
		node := p.Annotations["workflows.argoproj.io/node-name"]
		if !k.node.MatchString(node) || !mainStarted(&p) {
			continue
		}
		k.mu.Lock()
		_, seen := k.kept[p.Name]
		var l *keptLog
		if !seen {
			l = &keptLog{workflow: p.Labels["workflows.argoproj.io/workflow"], node: node, file: filepath.Join(k.dir, p.Name+".log"), done: make(chan struct{})}
			k.kept[p.Name] = l
		}
		k.mu.Unlock()
		if seen {
			continue
		}
		followers.Add(1)
		go func(pod string) {
			defer followers.Done()
			defer close(l.done)
			if err := follow(c, cs, pod, l.file); err != nil && c.Err() == nil {
				k.t.Logf("%s's log of %s is incomplete: %v", k.step, pod, err)
			}
		}(p.Name)
	}
}

// mainStarted says whether the pod's main container has run (its log exists).
func mainStarted(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "main" {
			return cs.State.Running != nil || cs.State.Terminated != nil
		}
	}
	return false
}

// follow copies the pod's main container's log into file until the container ends.
func follow(c context.Context, cs kubernetes.Interface, pod, file string) error {
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	defer out.Close()
	in, err := cs.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: "main", Follow: true}).Stream(c)
	if err != nil {
		return err
	}
	defer in.Close()
	_, err = io.Copy(out, in)
	return err
}

// attempts is the kept logs of the step's attempts in workflow, in their order, once each
// has ended.
func (k *stepLogs) attempts(workflow string) []string {
	k.mu.Lock()
	var logs []*keptLog
	for _, l := range k.kept {
		if l.workflow == workflow {
			logs = append(logs, l)
		}
	}
	k.mu.Unlock()
	slices.SortFunc(logs, func(a, b *keptLog) int { return attemptNumber(a.node) - attemptNumber(b.node) })
	var out []string
	for _, l := range logs {
		select {
		case <-l.done:
		case <-time.After(2 * time.Minute):
			k.t.Fatalf("%s's log of %s has not ended 2 minutes after its Workflow", k.step, l.node)
		}
		raw, err := os.ReadFile(l.file)
		must(k.t, err)
		out = append(out, string(raw))
	}
	return out
}

// attemptNumber is N of Argo's node name step(N), 0 without it.
func attemptNumber(node string) int {
	m := regexp.MustCompile(`\((\d+)\)$`).FindStringSubmatch(node)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// checkJoinResets checks, from the kept logs of wf's run-kubespray attempts, that each attempt
// reset exactly the masters that the attempts before it left half joined
// (testkubespray.CheckJoinResets), and that the masters of joined were joined by kubeadm in
// one of them.
func (s *suite) checkJoinResets(wf *wfv1.Workflow, joined ...string) {
	t := s.t
	t.Helper()
	logs := s.runKubesprayLogs.attempts(wf.Name)
	if len(logs) == 0 {
		t.Fatalf("no log of run-kubespray was kept for %s", wf.Name)
	}
	var attempts []testkubespray.JoinAttempt
	var read, joins []string
	for i, out := range logs {
		a := testkubespray.ParseJoinAttempt(out)
		attempts = append(attempts, a)
		// A join that failed only in its wait made every change of the join.
		joins = append(joins, a.Joined...)
		joins = append(joins, a.WaitFailed...)
		read = append(read, fmt.Sprintf("attempt %d: reset %v, kubeadm joined %v, its join failed %v (in its wait %v), ended %v",
			i+1, a.Reset, a.Joined, a.FailedJoins, a.WaitFailed, a.Ended))
		for _, e := range a.JoinErrors {
			read = append(read, fmt.Sprintf("attempt %d, kubeadm's join: %s", i+1, e))
		}
	}
	say(t, "run-kubespray's attempts in %s: %s", wf.Name, strings.Join(read, "; "))
	if err := testkubespray.CheckJoinResets(attempts); err != nil {
		t.Error(err)
	}
	for _, m := range joined {
		if !slices.Contains(joins, m) {
			t.Errorf("no attempt of run-kubespray in %s has kubeadm join %s in kubespray's join task", wf.Name, m)
		}
	}
}
