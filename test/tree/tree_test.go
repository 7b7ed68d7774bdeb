// Package tree_test checks the repository against itself: what its docs and comments name
// exists, the folder table of docs/architecture.md is the tree's, and the tools the tests
// build are the versions the product is built against.
package tree_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// root is the repository's top, from this package's folder.
const root = "../.."

func read(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// makeTargets are the Makefile's targets.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`).FindAllStringSubmatch(read(t, "Makefile"), -1) {
		targets[m[1]] = true
	}
	if !targets["test"] || !targets["demo"] {
		t.Fatalf("the Makefile's targets %v miss test or demo: the pattern no longer reads them", targets)
	}
	return targets
}

// e2eClusterRuns are the E2E_CLUSTER values make e2e-cluster runs a test for.
func e2eClusterRuns(t *testing.T) map[string]bool {
	t.Helper()
	runs := map[string]bool{}
	for _, m := range regexp.MustCompile(`\[\[ " \$\(E2E_CLUSTER\) " == \*" ([a-z-]+) "\* \]\]`).FindAllStringSubmatch(read(t, "Makefile"), -1) {
		runs[m[1]] = true
	}
	if len(runs) < 2 {
		t.Fatalf("E2E_CLUSTER runs %v: the pattern no longer reads the Makefile", runs)
	}
	return runs
}

// prose is the text people read: every Markdown file, and the comments of every Go, shell and
// Makefile source, with the file each line comes from.
type line struct {
	file string
	n    int
	text string
}

func prose(t *testing.T) []line {
	t.Helper()
	var out []line
	for _, rel := range trackedFiles(t) {
		var comment func(string) (string, bool)
		base := filepath.Base(rel)
		switch {
		case strings.HasPrefix(rel, "hack/tools/") || strings.Contains(rel, "/testdata/"):
			continue // other projects' sources; recorded output
		case strings.HasSuffix(rel, ".md"):
			comment = func(s string) (string, bool) { return s, true }
		case strings.HasSuffix(rel, ".go"):
			comment = after("//")
		case strings.HasSuffix(rel, ".sh"), base == "Makefile", strings.HasSuffix(rel, ".yml"), strings.HasSuffix(rel, ".yaml"):
			comment = after("#")
		default:
			continue
		}
		raw, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for n, text := range strings.Split(string(raw), "\n") {
			if c, ok := comment(text); ok {
				out = append(out, line{rel, n + 1, c})
			}
		}
	}
	return out
}

// trackedFiles are the repository's files as git knows them (tracked, or new and not
// ignored): what a fresh clone holds, not what a build left beside them.
func trackedFiles(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("git cannot list the repository's files (%v): these checks read a git checkout", err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			files = append(files, f)
		}
	}
	return files
}

func after(marker string) func(string) (string, bool) {
	return func(s string) (string, bool) {
		i := strings.Index(s, marker)
		if i < 0 {
			return "", false
		}
		return s[i+len(marker):], true
	}
}

// TestProseNamesOnlyWhatExists: a doc or a comment that tells a reader to run `make X` or
// `E2E_CLUSTER=Y` names a target and a run the Makefile has. A target is named in backquotes
// (`make demo`), or as make and a hyphenated word that ends the phrase or takes a variable
// (make e2e-cluster E2E_CLUSTER=upgrade), which English rarely does.
func TestProseNamesOnlyWhatExists(t *testing.T) {
	targets, runs := makeTargets(t), e2eClusterRuns(t)
	quoted := regexp.MustCompile("`(?:sudo )?make ([a-z][a-z0-9-]*)")
	hyphenated := regexp.MustCompile(`\bmake ([a-z0-9]+-[a-z0-9-]*[a-z0-9])(?:$|[),.;:]| [A-Z0-9_]+=)`)
	cluster := regexp.MustCompile(`E2E_CLUSTER=([a-z][a-z-]*)`)
	var wrong []string
	for _, l := range prose(t) {
		for _, re := range []*regexp.Regexp{quoted, hyphenated} {
			for _, m := range re.FindAllStringSubmatch(l.text, -1) {
				if !targets[m[1]] {
					wrong = append(wrong, l.file+":"+strconv.Itoa(l.n)+": make "+m[1])
				}
			}
		}
		for _, m := range cluster.FindAllStringSubmatch(l.text, -1) {
			if !runs[m[1]] {
				wrong = append(wrong, l.file+":"+strconv.Itoa(l.n)+": E2E_CLUSTER="+m[1])
			}
		}
	}
	if len(wrong) > 0 {
		t.Errorf("named but not in the Makefile:\n%s", strings.Join(wrong, "\n"))
	}
}

// TestProseHoldsNoRunDiary: docs and comments describe the product as it is, in the present
// tense; dates and clock times of runs belong in commit messages. The figures' table
// (docs/performance.md) is where a measurement's date lives.
func TestProseHoldsNoRunDiary(t *testing.T) {
	date := regexp.MustCompile(`\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b`)
	clock := regexp.MustCompile(`\(\d{1,2}:\d{2}(:\d{2})?\)|\bat \d{1,2}:\d{2}\b|\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)( real)? run\b.*\b(passed|failed)\b`)
	var diary []string
	for _, l := range prose(t) {
		if l.file == filepath.Join("docs", "performance.md") {
			continue
		}
		if date.MatchString(l.text) || clock.MatchString(l.text) {
			diary = append(diary, l.file+":"+strconv.Itoa(l.n)+": "+strings.TrimSpace(l.text))
		}
	}
	if len(diary) > 0 {
		t.Errorf("dated or timed runs outside docs/performance.md:\n%s", strings.Join(diary, "\n"))
	}
}

// TestArchitectureFolderTable: every folder of Go packages is in docs/architecture.md's folder
// table, and the table names no folder that is gone.
func TestArchitectureFolderTable(t *testing.T) {
	doc := read(t, "docs/architecture.md")
	start := strings.Index(doc, "## Folders")
	if start < 0 {
		t.Fatal("docs/architecture.md has no Folders section")
	}
	table := doc[start:]
	if end := strings.Index(table[len("## Folders"):], "\n## "); end >= 0 {
		table = table[:len("## Folders")+end]
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z0-9_/.<>-]+?)/?`").FindAllStringSubmatch(table, -1) {
		if info, err := os.Stat(filepath.Join(root, m[1])); strings.Contains(m[1], "/") || (err == nil && info.IsDir()) {
			named[m[1]] = true
		}
	}
	var missing, gone []string
	for _, dir := range packageFolders(t) {
		if !covered(dir, named) {
			missing = append(missing, dir)
		}
	}
	for dir := range named {
		if strings.Contains(dir, "<") || strings.Contains(dir, ".") {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			gone = append(gone, dir)
		}
	}
	slices.Sort(gone)
	if diff := cmp.Diff([]string(nil), missing); diff != "" {
		t.Errorf("folders of Go packages missing from docs/architecture.md's table (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string(nil), gone); diff != "" {
		t.Errorf("folders docs/architecture.md's table names that are gone (-want +got):\n%s", diff)
	}
}

// covered: a folder is described by its own row or by its parent's (pkg/steps/<step> covers
// every step; hack/ covers hack's tools).
func covered(dir string, named map[string]bool) bool {
	for d := dir; d != "." && d != ""; d = filepath.Dir(d) {
		if named[d] {
			return d == dir || d == "hack" || d == "pkg/steps" || strings.HasPrefix(dir, "pkg/steps/")
		}
	}
	return strings.HasPrefix(dir, "pkg/steps/") && named["pkg/steps/<step>"]
}

// packageFolders are the folders holding Go files, but for hack/tools (modules of their own).
func packageFolders(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, rel := range trackedFiles(t) {
		if strings.HasSuffix(rel, ".go") && !strings.HasPrefix(rel, "hack/tools/") && !strings.Contains(rel, "/testdata/") && filepath.Dir(rel) != "." {
			seen[filepath.Dir(rel)] = true
		}
	}
	var out []string
	for dir := range seen {
		out = append(out, dir)
	}
	slices.Sort(out)
	return out
}

// TestToolsFollowGoMod: the control plane, the node and Argo the tests run are built from
// hack/tools/<tool>/go.mod; they must be the Kubernetes and the Argo the product is built
// against (its go.mod), or the suites test another pairing than the one shipped.
func TestToolsFollowGoMod(t *testing.T) {
	version := func(gomod, module string) string {
		m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(module) + ` (v\S+)`).FindStringSubmatch(gomod)
		if m == nil {
			t.Fatalf("no %s in go.mod", module)
		}
		return m[1]
	}
	product := read(t, "go.mod")
	kube := strings.Replace(version(product, "k8s.io/api"), "v0.", "v1.", 1)
	if got := version(read(t, "hack/tools/kubernetes/go.mod"), "k8s.io/kubernetes"); got != kube {
		t.Errorf("hack/tools/kubernetes builds Kubernetes %s; the product is built against %s: run hack/tools/update-kubernetes.sh", got, kube)
	}
	argo := version(product, "github.com/argoproj/argo-workflows/v3")
	if got := version(read(t, "hack/tools/argo/go.mod"), "github.com/argoproj/argo-workflows/v3"); got != argo {
		t.Errorf("hack/tools/argo builds Argo %s; the product is built against %s", got, argo)
	}
}

// TestCompilerReachesNothing: the compiler and the templates and decisions of every step are
// pure over everything they import, not only file by file (depguard's "pure" rule): what a
// step's pod runs is its folder's package pod, which the compiler never imports. Argo's own
// API package brings client-go's REST types with it; that is Argo's, not a client of ours.
func TestCompilerReachesNothing(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./pkg/compile")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./pkg/compile: %v", err)
	}
	// Prefixes: a package and everything under it. Argo's API brings net/http, os/exec and
	// clientcmd's types (tools/clientcmd/api) with client-go's REST types, so those are not.
	forbidden := regexp.MustCompile(`^(sigs\.k8s\.io/controller-runtime/pkg/(client|manager|cache)|` +
		`k8s\.io/client-go/(kubernetes|dynamic)|k8s\.io/client-go/tools/clientcmd$|golang\.org/x/crypto/ssh|` +
		`github\.com/pkg/sftp|github\.com/spf13/cobra|` +
		`github\.com/akraino-edge-stack/bpa-workflow-controller/(internal/(sshexec|knownhosts|siteregistry)|pkg/steps/(stepcmd|[a-z]+/pod)))(/|$)`)
	var reached []string
	for _, pkg := range strings.Fields(string(out)) {
		if forbidden.MatchString(pkg) {
			reached = append(reached, pkg)
		}
	}
	if diff := cmp.Diff([]string(nil), reached); diff != "" {
		t.Errorf("pkg/compile reaches a client, SSH, a process or a step's pod (-want +got):\n%s", diff)
	}
}
