// Package podrunner plays the kubelet and Argo's wait container for Workflow pods, where no
// container runtime runs: it binds each pod to a node name, runs the main container's command
// as a local process — the emissary prefix stripped, the image mapped to a local binary — with
// the container's environment, in its own mount namespace where the pod's emptyDir, Secret and
// ConfigMap volumes and Argo's raw input artifacts appear at their mount paths (a private /tmp
// among them), then writes the WorkflowTaskResult exactly as Argo's executor does, waits for
// the Workflow to take it, and sets the pod's phase and exit codes.
//
// It is test equipment: never part of the product binary. It needs root (mount namespaces).
package podrunner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Argo's names (workflow/common).
const (
	labelWorkflow         = "workflows.argoproj.io/workflow"
	labelOutputsCompleted = "workflows.argoproj.io/report-outputs-completed"
	annotationNodeID      = "workflows.argoproj.io/node-id"
	envTemplate           = "ARGO_TEMPLATE"
	envWorkflowName       = "ARGO_WORKFLOW_NAME"
	envWorkflowUID        = "ARGO_WORKFLOW_UID"
	envNodeID             = "ARGO_NODE_ID"
)

// Image says how a container image runs here.
type Image struct {
	// Binary replaces the container's entrypoint (command[0]); empty keeps it (found on PATH).
	Binary string
	// Dir is the working directory (kubespray's playbooks, say); empty: a scratch directory.
	Dir string
	// Rewrite changes the arguments (a plugin's manifest URL to a local file, say).
	Rewrite func(args []string) []string
}

// Runner runs the pods of one namespace.
type Runner struct {
	Client    client.Client
	Namespace string
	NodeName  string
	Images    map[string]Image
	// Env is added to every process (KUBECONFIG for the steps, PATH).
	Env []string
	// Log receives one line per pod and each process's output.
	Log io.Writer
	// ScratchDir holds each pod's volumes. It must not be under /tmp: each pod gets a private
	// /tmp, which would hide them.
	ScratchDir string

	mu      sync.Mutex
	started map[string]bool
	wg      sync.WaitGroup
	// created are the mount points made on the host, removed when Run ends.
	created []string
}

// Run handles pods until ctx ends, then waits for the running ones.
func (r *Runner) Run(ctx context.Context) error {
	r.started = map[string]bool{}
	defer r.removeMountPoints()
	defer r.wg.Wait()
	for {
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.HasLabels{labelWorkflow}); err != nil && ctx.Err() == nil {
			r.logf("listing pods: %v", err)
		}
		for i := range pods.Items {
			pod := pods.Items[i]
			r.mu.Lock()
			seen := r.started[string(pod.UID)]
			r.started[string(pod.UID)] = true
			r.mu.Unlock()
			if seen || pod.Status.Phase != corev1.PodPending || pod.DeletionTimestamp != nil {
				continue
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				if err := r.runPod(ctx, &pod); err != nil && ctx.Err() == nil {
					r.logf("pod %s: %v", pod.Name, err)
				}
			}()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (r *Runner) logf(format string, args ...any) {
	if r.Log != nil {
		r.mu.Lock()
		fmt.Fprintf(r.Log, "podrunner: "+format+"\n", args...)
		r.mu.Unlock()
	}
}

// podEnv reads the Argo variables only the init and wait containers carry.
func podEnv(pod *corev1.Pod) map[string]string {
	env := map[string]string{}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, e := range c.Env {
				if strings.HasPrefix(e.Name, "ARGO_") && e.Value != "" {
					env[e.Name] = e.Value
				}
			}
		}
	}
	return env
}

func mainContainer(pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == "main" {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

func (r *Runner) runPod(ctx context.Context, pod *corev1.Pod) error {
	env := podEnv(pod)
	main := mainContainer(pod)
	if main == nil || env[envTemplate] == "" {
		return fmt.Errorf("not a Workflow container pod (no main container or %s)", envTemplate)
	}
	var tmpl wfv1.Template
	if err := json.Unmarshal([]byte(env[envTemplate]), &tmpl); err != nil {
		return fmt.Errorf("%s: %w", envTemplate, err)
	}
	nodeID := pod.Annotations[annotationNodeID]
	if nodeID == "" {
		nodeID = env[envNodeID]
	}
	if err := r.bind(ctx, pod); err != nil {
		return err
	}
	if err := r.setStatus(ctx, pod, corev1.PodRunning, nil, ""); err != nil {
		return err
	}

	scratch, err := os.MkdirTemp(r.ScratchDir, "pod-"+pod.Name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	mounts, err := r.prepareVolumes(ctx, pod, main, &tmpl, scratch)
	if err != nil {
		return r.finish(ctx, pod, nodeID, env, nil, 1, "volumes: "+err.Error())
	}
	code, stderrTail := r.exec(ctx, pod, main, mounts, scratch)
	outputs := &wfv1.Outputs{ExitCode: ptrTo(strconv.Itoa(code))}
	for _, p := range tmpl.Outputs.Parameters {
		if p.ValueFrom == nil || p.ValueFrom.Path == "" {
			continue
		}
		raw, err := os.ReadFile(hostPath(mounts, p.ValueFrom.Path))
		if err != nil {
			continue // Argo reports missing outputs of a failed step as absent
		}
		outputs.Parameters = append(outputs.Parameters, wfv1.Parameter{Name: p.Name, Value: wfv1.AnyStringPtr(strings.TrimSuffix(string(raw), "\n"))})
	}
	return r.finish(ctx, pod, nodeID, env, outputs, code, stderrTail)
}

// finish reports like Argo's wait container, then ends the pod like a kubelet.
func (r *Runner) finish(ctx context.Context, pod *corev1.Pod, nodeID string, env map[string]string, outputs *wfv1.Outputs, code int, message string) error {
	if err := r.writeTaskResult(ctx, pod, nodeID, env, outputs); err != nil {
		return err
	}
	if err := r.waitTaskResultTaken(ctx, env[envWorkflowName], nodeID); err != nil {
		return err
	}
	phase := corev1.PodSucceeded
	if code != 0 {
		phase = corev1.PodFailed
	}
	r.logf("pod %s (%s) exited %d", pod.Name, env[envWorkflowName], code)
	return r.setStatus(ctx, pod, phase, &code, message)
}

func (r *Runner) bind(ctx context.Context, pod *corev1.Pod) error {
	if pod.Spec.NodeName != "" {
		return nil
	}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target: corev1.ObjectReference{Kind: "Node", Name: r.NodeName}}
	if err := r.Client.SubResource("binding").Create(ctx, pod, binding); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("binding: %w", err)
	}
	return nil
}

// mount is a directory or file of the container, backed by a host path.
type mount struct{ container, host string }

// prepareVolumes materialises the main container's volumes under scratch.
func (r *Runner) prepareVolumes(ctx context.Context, pod *corev1.Pod, main *corev1.Container, tmpl *wfv1.Template, scratch string) ([]mount, error) {
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	var mounts []mount
	for _, vm := range main.VolumeMounts {
		v, ok := volumes[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volume %s is not in the pod", vm.Name)
		}
		if vm.Name == "var-run-argo" || vm.Name == "input-artifacts" {
			continue // argoexec's own, and the init container's artifacts (written below)
		}
		dir := filepath.Join(scratch, "volumes", vm.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		switch {
		case v.EmptyDir != nil:
		case v.HostPath != nil:
			dir = v.HostPath.Path
		case v.Secret != nil:
			sec := &corev1.Secret{}
			if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v.Secret.SecretName}, sec); err != nil {
				return nil, fmt.Errorf("secret volume %s: %w", vm.Name, err)
			}
			if err := project(dir, sec.Data, v.Secret.Items); err != nil {
				return nil, err
			}
		case v.ConfigMap != nil:
			cm := &corev1.ConfigMap{}
			if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v.ConfigMap.Name}, cm); err != nil {
				return nil, fmt.Errorf("configMap volume %s: %w", vm.Name, err)
			}
			data := map[string][]byte{}
			for k, val := range cm.Data {
				data[k] = []byte(val)
			}
			if err := project(dir, data, v.ConfigMap.Items); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("volume %s: only emptyDir, hostPath, secret and configMap are supported", vm.Name)
		}
		host := dir
		if vm.SubPath != "" {
			host = filepath.Join(dir, vm.SubPath)
		}
		mounts = append(mounts, mount{container: vm.MountPath, host: host})
	}
	// Raw input artifacts, as the init container would lay them out.
	for _, a := range tmpl.Inputs.Artifacts {
		if a.Raw == nil || a.Path == "" {
			continue
		}
		if covered := hostPath(mounts, a.Path); covered != a.Path {
			if err := writeFile(covered, []byte(a.Raw.Data)); err != nil {
				return nil, err
			}
			continue
		}
		dir := filepath.Join(scratch, "artifacts", path.Dir(a.Path))
		if err := writeFile(filepath.Join(dir, path.Base(a.Path)), []byte(a.Raw.Data)); err != nil {
			return nil, err
		}
		if !hasMount(mounts, path.Dir(a.Path)) {
			mounts = append(mounts, mount{container: path.Dir(a.Path), host: dir})
		}
	}
	return mounts, nil
}

func hasMount(mounts []mount, container string) bool {
	for _, m := range mounts {
		if m.container == container {
			return true
		}
	}
	return false
}

// hostPath maps a container path to the host through the longest mount covering it; a path
// no mount covers is returned as is.
func hostPath(mounts []mount, p string) string {
	best := -1
	for i, m := range mounts {
		if (p == m.container || strings.HasPrefix(p, strings.TrimSuffix(m.container, "/")+"/")) &&
			(best < 0 || len(m.container) > len(mounts[best].container)) {
			best = i
		}
	}
	if best < 0 {
		return p
	}
	return filepath.Join(mounts[best].host, strings.TrimPrefix(p, mounts[best].container))
}

func project(dir string, data map[string][]byte, items []corev1.KeyToPath) error {
	if len(items) == 0 {
		for k, v := range data {
			if err := writeFile(filepath.Join(dir, k), v); err != nil {
				return err
			}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("key %s is missing", it.Key)
		}
		if err := writeFile(filepath.Join(dir, it.Path), v); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o600)
}

// exec runs the main container's command in a private mount namespace with the volumes
// mounted, and returns its exit code and the last line of its stderr (the termination message
// FallbackToLogsOnError would give).
func (r *Runner) exec(ctx context.Context, pod *corev1.Pod, main *corev1.Container, mounts []mount, scratch string) (int, string) {
	argv := append(slices(main.Command), main.Args...)
	if i := indexOf(argv, "--"); i >= 0 && len(argv) > 0 && strings.HasSuffix(argv[0], "argoexec") {
		argv = argv[i+1:] // the emissary prefix: /var/run/argo/argoexec emissary -- ...
	}
	if len(argv) == 0 {
		return 1, "no command"
	}
	img, ok := r.Images[main.Image]
	if !ok {
		return 1, fmt.Sprintf("image %s is not mapped to a local program", main.Image)
	}
	if img.Binary != "" {
		argv[0] = img.Binary
	}
	if img.Rewrite != nil {
		argv = img.Rewrite(argv)
	}
	dir := img.Dir
	if dir == "" {
		dir = scratch
	}
	// Mount points are created on the host (empty directories or files) before entering the
	// namespace; the mounts themselves exist only inside it.
	var script strings.Builder
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].container) < len(mounts[j].container) })
	for _, m := range mounts {
		info, err := os.Stat(m.host)
		if err != nil {
			return 1, err.Error()
		}
		if info.IsDir() {
			r.mkdirAll(m.container)
		} else if _, err := os.Stat(m.container); err != nil {
			r.mkdirAll(path.Dir(m.container))
			if os.WriteFile(m.container, nil, 0o600) == nil {
				r.remember(m.container)
			}
		}
		fmt.Fprintf(&script, "mount --bind %s %s || exit 64\n", shellQuote(m.host), shellQuote(m.container))
	}
	script.WriteString(`exec "$@"` + "\n")
	cmd := exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", script.String(), "sh"}, argv...)...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(append([]string{}, r.Env...), r.containerEnv(ctx, pod, main)...)
	var stderr bytes.Buffer
	out := io.Discard
	if r.Log != nil {
		out = &prefixWriter{prefix: "  " + pod.Name + ": ", w: r.Log, mu: &r.mu}
	}
	cmd.Stdout = out
	cmd.Stderr = io.MultiWriter(out, &stderr)
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, &exit):
		return exit.ExitCode(), lastLine(stderr.String())
	default:
		return 1, err.Error()
	}
}

// containerEnv resolves the container's env: values, field references, Secret and ConfigMap
// keys.
func (r *Runner) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container) []string {
	var env []string
	for _, e := range c.Env {
		v := e.Value
		if s := e.ValueFrom; s != nil {
			switch {
			case s.FieldRef != nil:
				switch s.FieldRef.FieldPath {
				case "metadata.name":
					v = pod.Name
				case "metadata.namespace":
					v = pod.Namespace
				case "spec.nodeName":
					v = r.NodeName
				}
			case s.SecretKeyRef != nil:
				sec := &corev1.Secret{}
				if r.Client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: s.SecretKeyRef.Name}, sec) == nil {
					v = string(sec.Data[s.SecretKeyRef.Key])
				}
			case s.ConfigMapKeyRef != nil:
				cm := &corev1.ConfigMap{}
				if r.Client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: s.ConfigMapKeyRef.Name}, cm) == nil {
					v = cm.Data[s.ConfigMapKeyRef.Key]
				}
			}
		}
		env = append(env, e.Name+"="+v)
	}
	return env
}

// writeTaskResult creates the WorkflowTaskResult as Argo's executor does: named after the
// node, labelled with the Workflow and report-outputs-completed, owned by the Workflow.
func (r *Runner) writeTaskResult(ctx context.Context, pod *corev1.Pod, nodeID string, env map[string]string, outputs *wfv1.Outputs) error {
	result := &wfv1.WorkflowTaskResult{
		ObjectMeta: metav1.ObjectMeta{
			Name: nodeID, Namespace: pod.Namespace,
			Labels: map[string]string{labelWorkflow: env[envWorkflowName], labelOutputsCompleted: "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: wfv1.SchemeGroupVersion.String(), Kind: "Workflow",
				Name: env[envWorkflowName], UID: typesUID(env[envWorkflowUID]),
			}},
		},
		NodeResult: wfv1.NodeResult{Outputs: outputs},
	}
	err := r.Client.Create(ctx, result)
	if apierrors.IsAlreadyExists(err) {
		// A retried node reuses no ID, but a restarted runner may meet its own result.
		cur := &wfv1.WorkflowTaskResult{}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(result), cur); err != nil {
			return err
		}
		cur.Labels, cur.NodeResult = result.Labels, result.NodeResult
		return r.Client.Update(ctx, cur)
	}
	return err
}

// waitTaskResultTaken waits until the Workflow has taken the node's task result, as the
// executor's wait container does before the pod may end.
func (r *Runner) waitTaskResultTaken(ctx context.Context, workflow, nodeID string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		wf := &wfv1.Workflow{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: workflow}, wf); err != nil {
			return err
		}
		// Argo records it in taskResultsCompletionStatus, or, for Workflows without that map,
		// in the node's taskResultSynced.
		if done, ok := wf.Status.TaskResultsCompletionStatus[nodeID]; ok && done {
			return nil
		}
		if n, ok := wf.Status.Nodes[nodeID]; ok && wf.Status.TaskResultsCompletionStatus == nil && n.TaskResultSynced != nil && *n.TaskResultSynced {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Workflow %s did not take the task result of %s within a minute", workflow, nodeID)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// setStatus writes the pod's phase and container states as a kubelet would. Argo patches the
// pod's labels meanwhile, so conflicts are retried.
func (r *Runner) setStatus(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, exitCode *int, message string) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur := &corev1.Pod{}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
			return err
		}
		now := metav1.Now()
		cur.Status.Phase = phase
		if cur.Status.StartTime == nil {
			cur.Status.StartTime = &now
		}
		terminated := func(code int32, reason, msg string) corev1.ContainerState {
			return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg, StartedAt: *cur.Status.StartTime, FinishedAt: now}}
		}
		cur.Status.InitContainerStatuses = nil
		for _, c := range cur.Spec.InitContainers {
			cur.Status.InitContainerStatuses = append(cur.Status.InitContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: terminated(0, "Completed", "")})
		}
		cur.Status.ContainerStatuses = nil
		for _, c := range cur.Spec.Containers {
			st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: exitCode == nil, Started: ptrTo(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *cur.Status.StartTime}}}
			if exitCode != nil {
				code, reason, msg := int32(0), "Completed", ""
				if c.Name == "main" && *exitCode != 0 {
					code, reason, msg = int32(*exitCode), "Error", message
				}
				st.State = terminated(code, reason, msg)
			}
			cur.Status.ContainerStatuses = append(cur.Status.ContainerStatuses, st)
		}
		return r.Client.Status().Update(ctx, cur)
	})
}

type prefixWriter struct {
	prefix string
	w      io.Writer
	mu     *sync.Mutex
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		p.mu.Lock()
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		p.mu.Unlock()
		p.buf = p.buf[i+1:]
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func slices(s []string) []string { return append([]string(nil), s...) }

func ptrTo[T any](v T) *T { return &v }

func typesUID(s string) types.UID { return types.UID(s) }

// mkdirAll makes a mount point and its missing parents, remembering what it made.
func (r *Runner) mkdirAll(dir string) {
	if _, err := os.Stat(dir); err == nil || dir == "/" {
		return
	}
	r.mkdirAll(path.Dir(dir))
	if os.Mkdir(dir, 0o755) == nil {
		r.remember(dir)
	}
}

func (r *Runner) remember(p string) {
	r.mu.Lock()
	r.created = append(r.created, p)
	r.mu.Unlock()
}

// removeMountPoints removes the mount points it made, deepest first; only empty ones go.
func (r *Runner) removeMountPoints() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.created) - 1; i >= 0; i-- {
		_ = os.Remove(r.created[i])
	}
	r.created = nil
}
