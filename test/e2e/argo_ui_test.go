//go:build e2e

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/chromedp/chromedp"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// argoUI is Argo's web UI, as the suite's Argo Server serves it, in headless Chromium
// (Debian's), driven over the DevTools protocol. What it does is what an operator does: it
// reads what the page shows and clicks what the page offers.
type argoUI struct {
	t   *testing.T
	ctx context.Context
	// base is the server as the browser reaches it: a relay on the machine's loopback into
	// the server's network namespace.
	base string
	// shots is where the screenshots go.
	shots string
}

// uiWait bounds each wait for the page.
const uiWait = 60 * time.Second

// screenshotsDir is where the suite keeps the UI's screenshots: BPA_E2E_SCREENSHOTS, or the
// suite's scratch folder. `make docs` copies the named ones into docs/images.
func (s *suite) screenshotsDir() string {
	if dir := os.Getenv("BPA_E2E_SCREENSHOTS"); dir != "" {
		return dir
	}
	return filepath.Join(s.scratch, "screenshots")
}

// argoUIMissing says why the browser cannot show Argo's UI here, "" when it can: the server
// serves the UI of its release only when hack/argo-ui.sh could build it, and the browser is
// Debian's chromium.
func argoUIMissing(a *argoServer) string {
	if _, err := exec.LookPath("chromium"); err != nil {
		return "Debian's chromium is missing (hack/install-test-deps.sh installs it)"
	}
	resp, err := a.http.Get(a.base + "/")
	if err != nil {
		return fmt.Sprintf("the Argo Server's page: %v", err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if strings.Contains(string(page), "Built without static files") || !strings.Contains(string(page), "<script") {
		return "Argo's UI is not built: hack/argo-ui.sh needs ../shared/third_party's argo-ui archive (hack/control-plane.sh said why)"
	}
	return ""
}

// openArgoUI starts the browser on a's UI; the subtest it is given skips, saying why, when the
// UI cannot be shown here.
func (s *suite) openArgoUI(t *testing.T, a *argoServer) *argoUI {
	t.Helper()
	if why := argoUIMissing(a); why != "" {
		t.Skip(why)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go forward(l, func() (net.Conn, error) { return dialIn(a.netns, "127.0.0.1:"+argoServerPort) })

	profile := t.TempDir()
	// Flags as for any headless Chromium on a closed network: without the background
	// networking ones, Chromium keeps dialing Google's services, which this machine refuses.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath("chromium"), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(profile),
		chromedp.WindowSize(1600, 1000),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The browser starts with the first action, on a context without a deadline: the
	// browser lives as long as that context.
	must(t, chromedp.Do(ctx))
	ui := &argoUI{t: t, ctx: ctx, base: "http://" + l.Addr().String(), shots: s.screenshotsDir()}
	must(t, os.MkdirAll(ui.shots, 0o755))
	t.Cleanup(func() {
		if t.Failed() {
			ui.shot("failed-" + regexp.MustCompile(`[^a-zA-Z0-9-]+`).ReplaceAllString(t.Name(), "-"))
		}
	})
	return ui
}

// run runs browser actions within uiWait.
func (ui *argoUI) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	ui.t.Helper()
	ctx, cancel := context.WithTimeout(ui.ctx, uiWait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		ui.t.Fatalf("Argo's UI: %s: %v", what, err)
	}
}

// open loads a page of the UI.
func (ui *argoUI) open(path string) {
	ui.t.Helper()
	ui.run("opening "+path, chromedp.Navigate(ui.base+path))
}

// until evaluates script (JavaScript returning a JSON-encodable value) until check accepts what
// it returns, within uiWait; it returns the last value.
func (ui *argoUI) until(what, script string, check func(raw json.RawMessage) error) json.RawMessage {
	ui.t.Helper()
	deadline := time.Now().Add(uiWait)
	var last json.RawMessage
	var err error
	for {
		ctx, cancel := context.WithTimeout(ui.ctx, 10*time.Second)
		var out any
		out, err = chromedp.Run(ctx, chromedp.Evaluate[any](script))
		cancel()
		if err == nil {
			last, _ = json.Marshal(out)
			if err = check(last); err == nil {
				return last
			}
		}
		if time.Now().After(deadline) {
			ui.t.Fatalf("Argo's UI: %s: %v (last seen %s)", what, err, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// click clicks the first element matching selector whose text is text (case aside), once it
// is on the page.
func (ui *argoUI) click(what, selector, text string) {
	ui.t.Helper()
	script := fmt.Sprintf(`(() => {
		const el = [...document.querySelectorAll(%q)].find(e => (e.innerText || e.textContent || '').trim().toUpperCase() === %q);
		if (!el) return false;
		el.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: window}));
		return true;
	})()`, selector, strings.ToUpper(text))
	ui.untilTrue(what, script, fmt.Errorf("no %s %q on the page", selector, text))
}

// untilTrue evaluates script until it returns true; missing says what is not on the page.
func (ui *argoUI) untilTrue(what, script string, missing error) {
	ui.t.Helper()
	ui.until(what, script, func(raw json.RawMessage) error {
		if string(raw) != "true" {
			return missing
		}
		return nil
	})
}

// text is the page's visible text once it holds every one of want.
func (ui *argoUI) text(what string, want ...string) string {
	ui.t.Helper()
	return ui.untilText(what, `document.body ? document.body.innerText : ""`, "the page", want...)
}

// untilText evaluates script, which returns a string, until it holds every one of want, and
// returns it; where names what shows the text, for the error.
func (ui *argoUI) untilText(what, script, where string, want ...string) string {
	ui.t.Helper()
	var text string
	ui.until(what, script, func(raw json.RawMessage) error {
		if err := json.Unmarshal(raw, &text); err != nil {
			return err
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				return fmt.Errorf("%s does not show %q", where, w)
			}
		}
		return nil
	})
	return text
}

// logs is what the UI's log viewer shows, once it holds want. The viewer is a terminal
// (xterm) that draws on a canvas, so the text is not in the page's DOM: it is read from the
// terminal's own buffer, reached from the viewer's element through React's fiber, rows that
// wrap joined again.
func (ui *argoUI) logs(what, want string) string {
	ui.t.Helper()
	const script = `(() => {
		const el = document.querySelector('.logs-viewer__container');
		const key = el && Object.keys(el).find(k => k.startsWith('__reactFiber$'));
		let f = key && el[key];
		while (f && !(f.stateNode && f.stateNode.terminal)) f = f.return;
		if (!f) return '';
		const buf = f.stateNode.terminal.buffer.active, lines = [];
		for (let i = 0; i < buf.length; i++) {
			const l = buf.getLine(i);
			if (!l) continue;
			if (l.isWrapped && lines.length) lines[lines.length - 1] += l.translateToString(true);
			else lines.push(l.translateToString(true));
		}
		return lines.join('\n').trim();
	})()`
	return ui.untilText(what, script, "the log viewer", want)
}

// shot keeps a screenshot of the whole page as name.png.
func (ui *argoUI) shot(name string) string {
	ui.t.Helper()
	ctx, cancel := context.WithTimeout(ui.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		ui.t.Logf("Argo's UI: no screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(ui.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		ui.t.Logf("Argo's UI: screenshot %s: %v", name, err)
		return ""
	}
	say(ui.t, "Argo's UI: screenshot %s", path)
	return path
}

// graphNode is a node of a Workflow's graph as the page draws it.
type graphNode struct {
	ID, Label, Classes, Fill string
}

// graph is the nodes the Workflow's graph draws (the SVG's title of each node is "ID (label)").
func (ui *argoUI) graph(what string, check func([]graphNode) error) []graphNode {
	ui.t.Helper()
	const script = `[...document.querySelectorAll('svg g > title')].map(t => {
		const g = t.parentElement.querySelector('g.node');
		const bg = g && g.querySelector('.bg');
		const m = (t.textContent || '').match(/^(\S+) \((.*)\)$/s);
		return {ID: m ? m[1] : '', Label: m ? m[2] : t.textContent, Classes: g ? g.getAttribute('class') : '',
			Fill: bg ? getComputedStyle(bg).fill : ''};
	})`
	var nodes []graphNode
	ui.until(what, script, func(raw json.RawMessage) error {
		nodes = nil
		if err := json.Unmarshal(raw, &nodes); err != nil {
			return err
		}
		return check(nodes)
	})
	return nodes
}

// clickNode selects a node of the graph, as a click on it does.
func (ui *argoUI) clickNode(id string) {
	ui.t.Helper()
	script := fmt.Sprintf(`(() => {
		const t = [...document.querySelectorAll('svg g > title')].find(t => (t.textContent || '').startsWith(%q + ' '));
		const g = t && t.parentElement.querySelector('g.node');
		if (!g) return false;
		g.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: window}));
		return true;
	})()`, id)
	ui.untilTrue("clicking node "+id, script, fmt.Errorf("no node %s in the graph", id))
}

// red says whether a CSS colour is a red: Argo draws a failed node's background in its red.
func red(css string) bool {
	var r, g, b int
	if _, err := fmt.Sscanf(css, "rgb(%d, %d, %d)", &r, &g, &b); err != nil {
		return false
	}
	return r > 150 && g < 120 && b < 120
}

// clickLink follows the link to path (its query aside).
func (ui *argoUI) clickLink(what, path string) {
	ui.t.Helper()
	script := fmt.Sprintf(`(() => {
		const a = [...document.querySelectorAll('a')].find(a => a.href && new URL(a.href).pathname === %q);
		if (!a) return false;
		a.click();
		return true;
	})()`, path)
	ui.untilTrue(what, script, fmt.Errorf("no link to %s", path))
}

// browseTheCluster does in the UI what an operator does first: the namespace's Workflows
// filtered by the cluster's label, the Provisioning's opened, its graph with every step by the
// name the DAG gives it.
func (s *suite) browseTheCluster(ui *argoUI, wf *wfv1.Workflow) {
	t := ui.t
	ui.open("/workflows/" + namespace + "?label=" + url.QueryEscape(bpav1.WorkflowClusterLabel+"="+cluster))
	// The list shows a Workflow by the title and description the compiler gives it.
	shown := wf.Name
	if d := wf.Annotations["workflows.argoproj.io/description"]; d != "" {
		shown = d
	}
	ui.text("the cluster's Workflows listed", shown)
	ui.shot("argo-workflows")
	ui.clickLink("opening "+wf.Name, "/workflows/"+namespace+"/"+wf.Name)
	var tasks []string
	if entry := wf.GetTemplateByName(wf.Spec.Entrypoint); entry != nil && entry.DAG != nil {
		for _, task := range entry.DAG.Tasks {
			tasks = append(tasks, task.Name)
		}
	}
	if len(tasks) == 0 {
		t.Fatalf("%s has no DAG tasks", wf.Name)
	}
	nodes := ui.graph("every step of "+wf.Name+" in its graph", func(nodes []graphNode) error {
		for _, task := range tasks {
			if !slices.ContainsFunc(nodes, func(n graphNode) bool { return n.Label == task }) {
				return fmt.Errorf("no node %s among %d", task, len(nodes))
			}
		}
		return nil
	})
	say(t, "Argo's UI: %s's graph draws %d nodes, its %d steps by their DAG names: %s", wf.Name, len(nodes), len(tasks), strings.Join(tasks, ", "))
	ui.shot("argo-workflow-graph")
}

// retryInTheUI does in the UI what an operator does with a step that failed for good: opens
// the Workflow, sees the step red, reads its log, and presses RETRY.
func (s *suite) retryInTheUI(ui *argoUI, wf *wfv1.Workflow) {
	t := ui.t
	var failed *wfv1.NodeStatus
	for _, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypePod && n.Phase == wfv1.NodeFailed {
			failed = n.DeepCopy()
		}
	}
	if failed == nil {
		t.Fatalf("%s has no failed step", wf.Name)
	}
	ui.open("/workflows/" + namespace + "/" + wf.Name)
	ui.graph(failed.DisplayName+" red in the graph", func(nodes []graphNode) error {
		i := slices.IndexFunc(nodes, func(n graphNode) bool { return n.ID == failed.ID })
		if i < 0 {
			return fmt.Errorf("no node %s among %d", failed.ID, len(nodes))
		}
		if n := nodes[i]; !strings.Contains(n.Classes, "Failed") || !red(n.Fill) {
			return fmt.Errorf("%s has classes %q and fill %s, want Failed and red", failed.DisplayName, n.Classes, n.Fill)
		}
		return nil
	})
	ui.shot("argo-failed-step")
	ui.clickNode(failed.ID)
	ui.click("the step's LOGS", "button", "LOGS")
	// The step's own error, as install-software writes it on its log: the package the
	// suite's injected dpkg failure left not as asked.
	logs := ui.logs("the step's log", "packages not as asked: jq")
	say(t, "Argo's UI: %s red; its log shows the error: %s", failed.DisplayName, lastLineWith(logs, "packages not as asked"))
	ui.shot("argo-step-log")
	ui.open("/workflows/" + namespace + "/" + wf.Name)
	ui.click("RETRY in the toolbar", "button", "RETRY")
	ui.click("Retry in the retry panel", ".sliding-panel button.argo-button--base", "Retry")
	say(t, "Argo's UI: RETRY pressed on %s", wf.Name)
}

// lastLineWith is the last line of text holding sub.
func lastLineWith(text, sub string) string {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}
