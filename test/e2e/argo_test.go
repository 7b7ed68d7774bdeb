//go:build e2e

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
)

// argo runs Argo's CLI (built from its module by hack/control-plane.sh) as an operator does:
// against the Kubernetes API (no Argo Server), in the suite's namespace. It returns stdout.
func (s *suite) argo(args ...string) string {
	s.t.Helper()
	cmd := exec.Command(s.argoCLI, append(args, "--namespace", namespace)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.argoKubeconfig, "ARGO_SERVER=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("argo %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	say(s.t, "argo %s\n%s", strings.Join(args, " "), head(string(out), 12))
	return string(out)
}

// head keeps the first n lines of out for the log: `argo get --output json` runs to hundreds.
func head(out string, n int) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n... (%d more lines)", len(lines)-n)
}

// stallSoftware makes the next install-software fail for good, applies mutate to the Software
// and waits until the CR is Stalled on that failure at generation; it returns the failed
// Workflow.
func (s *suite) stallSoftware(sw *bpav1.Software, generation int64, mutate func(*bpav1.Software)) *wfv1.Workflow {
	s.t.Helper()
	s.hosts[0].failOnce(s.t, installFailure) // master-1: the stages change its packages
	patch(s.t, s.c, sw, mutate)
	s.eventually(fmt.Sprintf("the Software stalled on the failure at generation %d", generation), func() error {
		cur := &bpav1.Software{}
		must(s.t, s.c.Get(ctx(), client.ObjectKeyFromObject(sw), cur))
		c := condition(cur.Status.Conditions, bpav1.ConditionStalled)
		// The step's own error, through its termination message: the node, the packages, apt's
		// failure.
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != generation ||
			!strings.Contains(c.Message, `node "master-1"`) || !strings.Contains(c.Message, "not as asked") || !strings.Contains(c.Message, "apt-get") {
			return fmt.Errorf("not stalled on it: %+v", cur.Status.Conditions)
		}
		say(s.t, "software/%s %s: %s", cur.Name, cur.Status.Phase, cur.Status.Message)
		return nil
	})
	return s.waitWorkflow(bpav1.WorkflowKindSoftware, sw.Name, generation)
}

// waitUnstalled waits until the Software's status has followed a restarted Workflow.
func (s *suite) waitUnstalled(sw *bpav1.Software) {
	s.t.Helper()
	s.eventually("the Software no longer Stalled", func() error {
		cur := &bpav1.Software{}
		must(s.t, s.c.Get(ctx(), client.ObjectKeyFromObject(sw), cur))
		if c := condition(cur.Status.Conditions, bpav1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
			return fmt.Errorf("still stalled: %s", c.Message)
		}
		return nil
	})
}

// argoServer is Argo's own server (`argo server`, the same binary as the CLI) with the UI's
// REST API, in a network namespace of its own that has only a loopback: nothing outside the
// test reaches it. The Kubernetes API is forwarded into that namespace on the same port, so
// the server uses the CLI's kubeconfig as it is.
type argoServer struct {
	http *http.Client
	base string
	// netns is the server's network namespace.
	netns string
}

const argoServerPort = "2746"

func (s *suite) startArgoServer() *argoServer {
	s.t.Helper()
	// A namespace of its own, with only a loopback: the server listens on nothing else.
	netns := testvm.NewNetNS(s.t).Path
	api, err := url.Parse(s.env.Config.Host)
	must(s.t, err)
	l, err := listenIn(netns, api.Host)
	must(s.t, err)
	s.t.Cleanup(func() { _ = l.Close() })
	go forward(l, func() (net.Conn, error) { return net.Dial("tcp", api.Host) })

	log, err := os.Create(filepath.Join(s.scratch, "argo-server.log"))
	must(s.t, err)
	cmd := exec.Command("nsenter", "--net="+netns, "--", s.argoCLI, "server", "--auth-mode=server", "--secure=false",
		"--namespaced", "--managed-namespace="+namespace, "--port="+argoServerPort, "--loglevel=info")
	// The UI's first-visit and feedback dialogs would cover the page.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.argoKubeconfig,
		"FIRST_TIME_USER_MODAL=false", "FEEDBACK_MODAL=false", "NEW_VERSION_MODAL=false")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = dieWithTest()
	must(s.t, cmd.Start())
	s.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if s.t.Failed() {
			raw, _ := os.ReadFile(log.Name())
			s.t.Logf("argo server log:\n%s", raw)
		}
	})
	srv := &argoServer{
		netns: netns,
		base:  "http://127.0.0.1:" + argoServerPort,
		http: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
			DialContext: func(context.Context, string, string) (net.Conn, error) {
				return dialIn(netns, "127.0.0.1:"+argoServerPort)
			},
		}},
	}
	s.eventually("argo server answering", func() error {
		var v map[string]any
		return srv.call(http.MethodGet, "/api/v1/version", nil, &v)
	})
	return srv
}

// call sends one request of the Argo UI's and decodes the answer into out.
func (a *argoServer) call(method, path string, body, out any) error {
	var in io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		in = strings.NewReader(string(raw))
	}
	req, err := http.NewRequest(method, a.base+path, in)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, raw)
	}
	return json.Unmarshal(raw, out)
}

// retryFromTheUI does what an operator does in the Argo UI: lists the cluster's Workflows,
// opens the failed one with its node tree, finds the failed step, and presses RETRY.
func (s *suite) retryFromTheUI(a *argoServer, name string) {
	s.t.Helper()
	var list wfv1.WorkflowList
	must(s.t, a.call(http.MethodGet, "/api/v1/workflows/"+namespace+"?listOptions.labelSelector="+
		url.QueryEscape(bpav1.WorkflowClusterLabel+"="+cluster), nil, &list))
	found := false
	for _, w := range list.Items {
		found = found || w.Name == name
	}
	if !found {
		s.t.Fatalf("the Argo Server lists %d Workflows of %s, not %s", len(list.Items), cluster, name)
	}
	var wf wfv1.Workflow
	must(s.t, a.call(http.MethodGet, "/api/v1/workflows/"+namespace+"/"+name, nil, &wf))
	var failedStep string
	for _, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypePod && n.Phase == wfv1.NodeFailed {
			failedStep = n.DisplayName + ": " + n.Message
		}
	}
	if wf.Status.Phase != wfv1.WorkflowFailed || failedStep == "" {
		s.t.Fatalf("the Argo Server shows %s %s with %d nodes and no failed step", name, wf.Status.Phase, len(wf.Status.Nodes))
	}
	say(s.t, "Argo UI: %s is %s, %d nodes; failed step %s", name, wf.Status.Phase, len(wf.Status.Nodes), failedStep)
	var retried wfv1.Workflow
	must(s.t, a.call(http.MethodPut, "/api/v1/workflows/"+namespace+"/"+name+"/retry",
		map[string]any{"name": name, "namespace": namespace}, &retried))
	say(s.t, "Argo UI: RETRY: %s is %s", name, retried.Status.Phase)
}

// forward accepts connections on l and copies each to a connection dial makes.
func forward(l net.Listener, dial func() (net.Conn, error)) {
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer in.Close()
			out, err := dial()
			if err != nil {
				return
			}
			defer out.Close()
			go func() { _, _ = io.Copy(out, in) }()
			_, _ = io.Copy(in, out)
		}()
	}
}
