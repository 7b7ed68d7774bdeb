//go:build e2e

package e2e_test

import (
	"fmt"
	"io"
	"slices"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// checkStepsLockedDown runs the render-inventory step of a Workflow the controller compiled, as
// compiled (its identity, pod and container security contexts, volumes), twice: as it is, and
// told to write outside /tmp, which must fail on the read-only root filesystem. A third pod of
// the same shape, from the kubespray stand-in image (it has a shell), reports what a step sees:
// its uid and gid and its mounts, which must be only the ones declared and Argo's.
func (s *suite) checkStepsLockedDown(compiled *wfv1.Workflow) {
	s.t.Helper()
	render := compiled.GetTemplateByName("render-inventory").DeepCopy()
	outside := render.DeepCopy()
	outside.Name, outside.Outputs = "render-inventory-outside-tmp", wfv1.Outputs{}
	for i, a := range outside.Container.Args {
		if strings.HasPrefix(a, "--output-dir=") {
			outside.Container.Args[i] = "--output-dir=/var/lib/bpa-outputs"
		}
	}
	look := render.DeepCopy()
	look.Name, look.Outputs, look.RetryStrategy = "what-a-step-sees", wfv1.Outputs{}, nil
	look.Container.Image = kubesprayImage
	look.Container.Command = []string{"/bin/sh", "-c", `echo "uid=$(id -u) gid=$(id -g)"; while read -r _ _ _ _ point _; do echo "mount=$point"; done </proc/self/mountinfo`}
	look.Container.Args = nil

	var hosts string
	for _, n := range compiled.Status.Nodes {
		if n.TemplateName == "resolve-leases" && n.Phase == wfv1.NodeSucceeded && n.Outputs != nil {
			for _, p := range n.Outputs.Parameters {
				if p.Name == "hosts" && p.Value != nil {
					hosts = p.Value.String()
				}
			}
		}
	}
	if hosts == "" {
		s.t.Fatalf("%s: no hosts output of resolve-leases to feed render-inventory", compiled.Name)
	}
	args := wfv1.Arguments{Parameters: []wfv1.Parameter{{Name: "hosts", Value: wfv1.AnyStringPtr(hosts)}}}
	wf := &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "lockdown-", Namespace: namespace},
		Spec: wfv1.WorkflowSpec{
			Entrypoint: "main", Arguments: compiled.Spec.Arguments,
			ServiceAccountName: compiled.Spec.ServiceAccountName, SecurityContext: compiled.Spec.SecurityContext,
			Volumes: compiled.Spec.Volumes,
			Templates: []wfv1.Template{
				{Name: "main", DAG: &wfv1.DAGTemplate{Tasks: []wfv1.DAGTask{
					{Name: "inside-tmp", Template: render.Name, Arguments: args},
					{Name: "outside-tmp", Template: outside.Name, Arguments: args},
					{Name: "look", Template: look.Name, Arguments: args},
				}}},
				*render, *outside, *look,
			},
		},
	}
	must(s.t, s.c.Create(ctx(), wf))
	s.eventually("Workflow "+wf.Name+" done", func() error {
		must(s.t, s.c.Get(ctx(), client.ObjectKeyFromObject(wf), wf))
		if !wf.Status.Phase.Completed() {
			return fmt.Errorf("phase %q", wf.Status.Phase)
		}
		return nil
	})
	phase := func(task string) wfv1.NodePhase {
		if n := wf.Status.Nodes.FindByDisplayName(task); n != nil {
			return n.Phase
		}
		return ""
	}
	if phase("inside-tmp") != wfv1.NodeSucceeded || phase("look") != wfv1.NodeSucceeded || phase("outside-tmp") != wfv1.NodeFailed {
		s.t.Errorf("render-inventory writing to /tmp: %s, outside /tmp: %s (want Succeeded, Failed); look: %s",
			phase("inside-tmp"), phase("outside-tmp"), phase("look"))
	}
	if out := s.podLog(wf, "outside-tmp"); !strings.Contains(out, "read-only file system") {
		s.t.Errorf("render-inventory writing outside /tmp failed without saying the root is read-only:\n%s", out)
	} else {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "read-only file system") {
				say(s.t, "a step writing outside /tmp fails: %s", strings.TrimSpace(line))
				break
			}
		}
	}

	// Only what the template declares (/tmp, the hosts artifact), what the kubelet gives every
	// container (its token, /etc/hosts, /etc/hostname, /etc/resolv.conf, the termination log)
	// and Argo's emissary (/var/run/argo), over /proc, /dev and /sys. /var/run is /run in a
	// Debian root filesystem.
	seen := s.podLog(wf, "look")
	allowed := []string{"/", "/tmp", "/inputs/hosts.json", "/var/run/argo", "/var/run/secrets/kubernetes.io/serviceaccount",
		"/run/argo", "/run/secrets/kubernetes.io/serviceaccount", "/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/dev/termination-log"}
	var mounts []string
	for _, line := range strings.Split(seen, "\n") {
		point, ok := strings.CutPrefix(strings.TrimSpace(line), "mount=")
		if !ok || point == "/proc" || point == "/dev" || point == "/sys" ||
			strings.HasPrefix(point, "/proc/") || strings.HasPrefix(point, "/dev/") && point != "/dev/termination-log" || strings.HasPrefix(point, "/sys/") {
			continue
		}
		mounts = append(mounts, point)
		if !slices.Contains(allowed, point) {
			s.t.Errorf("a step's container has %s mounted, which its template does not declare", point)
		}
	}
	if !strings.Contains(seen, "uid=65532 gid=65532") || !slices.Contains(mounts, "/tmp") {
		s.t.Errorf("a step's container reports:\n%s\nwant uid=65532 gid=65532 and /tmp mounted", seen)
	}
	say(s.t, "a step's container: %s; mounts %s", strings.TrimSpace(strings.SplitN(seen, "\n", 2)[0]), strings.Join(mounts, " "))
}

// podLog reads the main container's log of a Workflow's task through the API server (which asks
// the node's kubelet).
func (s *suite) podLog(wf *wfv1.Workflow, task string) string {
	s.t.Helper()
	var pods corev1.PodList
	must(s.t, s.c.List(ctx(), &pods, client.InNamespace(namespace), client.MatchingLabels{"workflows.argoproj.io/workflow": wf.Name}))
	for _, p := range pods.Items {
		if strings.HasSuffix(p.Annotations["workflows.argoproj.io/node-name"], "."+task) {
			cs, err := kubernetes.NewForConfig(s.env.Config)
			must(s.t, err)
			rc, err := cs.CoreV1().Pods(namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: "main"}).Stream(ctx())
			must(s.t, err)
			defer rc.Close()
			raw, err := io.ReadAll(rc)
			must(s.t, err)
			return string(raw)
		}
	}
	s.t.Fatalf("no pod of task %s in %s", task, wf.Name)
	return ""
}
