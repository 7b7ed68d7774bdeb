package runkubespray

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// factsHelper runs FactsHelper, as the pod does, with the Python that runs the host's
// ansible-playbook (the helper reads the inventory through Ansible's own parser), on nodes at
// loopback addresses: one that answers has a listener at its port, one that does not, a port
// nothing listens on.
type factsHelper struct {
	python, script                                     string
	cache, facts, inventory, known, output, terminated string
	ports                                              map[string]int
	env                                                []string
}

// factsNodes are the nodes of the helper's inventory: their addresses, and whether each
// answers.
var factsNodes = []struct {
	name, address string
	answers       bool
}{
	{"master", "127.0.0.1", true}, {"worker-1", "127.0.0.2", true}, {"worker-2", "127.0.0.3", true},
	{"worker-3", "127.0.0.4", true}, {"worker-4", "127.0.0.5", true}, {"worker-5", "127.0.0.6", true},
	{"worker-6", "127.0.0.7", false}, {"worker-7", "127.0.0.8", false},
}

func newFactsHelper(t *testing.T) *factsHelper {
	t.Helper()
	playbook, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Fatalf("ansible-playbook is missing: run `make test-deps` (Debian ansible-core)")
	}
	f, err := os.Open(playbook)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	shebang, _ := bufio.NewReader(f).ReadString('\n')
	fields := strings.Fields(strings.TrimPrefix(shebang, "#!"))
	if len(fields) == 0 {
		t.Fatalf("%s has no interpreter line", playbook)
	}
	dir := t.TempDir()
	h := &factsHelper{python: fields[len(fields)-1], script: filepath.Join(dir, "bpa_kubespray_facts.py"),
		cache: filepath.Join(dir, "cache"), facts: filepath.Join(dir, "facts"), inventory: filepath.Join(dir, "hosts.ini"),
		known: filepath.Join(dir, "known_hosts"), output: filepath.Join(dir, "outputs", FactsFile),
		terminated: filepath.Join(dir, "termination-log"), ports: map[string]int{}}
	if fields[0] == "/usr/bin/env" {
		h.python = fields[1]
	}
	inventory := "[kube_control_plane]\n"
	var known strings.Builder
	for i, n := range factsNodes {
		l, err := net.Listen("tcp", n.address+":0")
		must(t, err)
		h.ports[n.name] = l.Addr().(*net.TCPAddr).Port
		if n.answers {
			t.Cleanup(func() { l.Close() })
		} else {
			l.Close() // nothing listens there: the node does not answer
		}
		inventory += fmt.Sprintf("%s ansible_host=%s ansible_port=%d\n", n.name, n.address, h.ports[n.name])
		if i == 0 {
			inventory += "[kube_node]\n"
		}
		fmt.Fprintf(&known, "[%s]:%d ssh-ed25519 %s\n", n.address, h.ports[n.name], pinnedKey(n.name))
	}
	inventory += "[etcd]\nmaster\n[k8s_cluster:children]\nkube_control_plane\nkube_node\n"
	for path, content := range map[string]string{h.script: FactsHelper, h.inventory: inventory, h.known: known.String(), h.terminated: ""} {
		must(t, os.WriteFile(path, []byte(content), 0o600))
	}
	must(t, os.MkdirAll(h.cache, 0o755))
	return h
}

// pinnedKey is the host key pinned for a node of factsNodes: worker-2's was pinned anew, since
// it was reprovisioned after its facts were gathered with "KEYWORKER2".
func pinnedKey(node string) string {
	key := "KEY" + strings.ToUpper(strings.ReplaceAll(node, "-", ""))
	if node == "worker-2" {
		key += "NEW"
	}
	return key
}

// run runs the helper and returns what it wrote and its exit status.
func (h *factsHelper) run(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(h.python, append([]string{h.script}, args...)...)
	cmd.Env = append(os.Environ(), "BPA_FACTS_CACHE="+h.cache, "ANSIBLE_CACHE_PLUGIN_CONNECTION="+h.facts,
		"BPA_FACTS_INVENTORY="+h.inventory, "BPA_FACTS_KNOWN_HOSTS="+h.known, "BPA_FACTS_OUTPUT="+h.output,
		"BPA_FACTS_TERMINATION_LOG="+h.terminated, "BPA_FACTS_PROBE_TIMEOUT=5",
		"ANSIBLE_LOCAL_TEMP="+t.TempDir(), "HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, h.env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		status = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s %v: %v\n%s%s", filepath.Base(h.script), args, err, out.String(), errOut.String())
	}
	return out.String(), errOut.String(), status
}

// keep writes a node's entry into the mounted cache, as the controller's ConfigMap holds it.
func (h *factsHelper) keep(t *testing.T, node string, entry []byte) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(h.cache, node), entry, 0o444))
}

func entry(t *testing.T, gathered time.Time, address string, facts map[string]any) []byte {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"gatheredAt": gathered.UTC().Format(time.RFC3339), "address": address, "facts": facts})
	must(t, err)
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err = w.Write(raw)
	must(t, err)
	must(t, w.Close())
	return b.Bytes()
}

func keyed(key string) map[string]any {
	return map[string]any{"ansible_default_ipv4": map[string]any{"address": "x"}, "ansible_ssh_host_key_ed25519_public": key}
}

// TestRestoreGathersOnlyWhatIsNotFresh: the kept facts of each node stand for it when they are
// younger than FactsMaxAge, were gathered at the node's address and hold its pinned host key;
// every other node outside the limit is named, with why, and gathered again if it answers; one
// that does not keeps its last facts when they hold but for their age. Only facts that stand
// reach the cache.
func TestRestoreGathersOnlyWhatIsNotFresh(t *testing.T) {
	h := newFactsHelper(t)
	now := time.Now()
	h.keep(t, "master", entry(t, now.Add(-time.Hour), "127.0.0.1", keyed("KEYMASTER")))
	h.keep(t, "worker-1", entry(t, now.Add(-25*time.Hour), "127.0.0.2", keyed("KEYWORKER1")))
	h.keep(t, "worker-2", entry(t, now.Add(-time.Hour), "127.0.0.3", keyed("KEYWORKER2")))
	h.keep(t, "worker-3", entry(t, now.Add(-time.Hour), "127.0.0.4", keyed("KEYWORKER3")))
	h.keep(t, "worker-4", entry(t, now.Add(-time.Hour), "127.0.0.9", keyed("KEYWORKER4")))
	h.keep(t, "worker-5", []byte("not gzip"))
	h.keep(t, "worker-6", entry(t, now.Add(-30*time.Hour), "127.0.0.7", keyed("KEYWORKER6")))
	h.keep(t, "worker-7", entry(t, now.Add(-time.Hour), "127.0.0.8", keyed("KEYWORKER7")))
	h.keep(t, FactsIndexKey, []byte(`{"master":"x"}`))

	stdout, stderr, status := h.run(t, "restore", "worker-5")
	if diff := cmp.Diff("worker-1,worker-2,worker-4\n", stdout); diff != "" || status != 0 {
		t.Errorf("the nodes to gather, exit %d (-want +got):\n%s%s", status, diff, stderr)
	}
	wantWhy := []string{
		"run-kubespray: worker-1: facts 25h old, older than 24h: gathering them again",
		"run-kubespray: worker-2: its host key changed since its facts were gathered (reprovisioned): gathering them again",
		"run-kubespray: worker-4: facts gathered at 127.0.0.9, the node is at 127.0.0.5 now: gathering them again",
		"run-kubespray: worker-6 (127.0.0.7) does not answer ([Errno 111] Connection refused): its kept facts stand for it (facts 30h old, older than 24h)",
	}
	if diff := cmp.Diff(wantWhy, strings.Split(strings.TrimSpace(stderr), "\n")); diff != "" {
		t.Errorf("why (-want +got):\n%s", diff)
	}
	restored, err := filepath.Glob(filepath.Join(h.facts, "[^.]*"))
	must(t, err)
	for i := range restored {
		restored[i] = filepath.Base(restored[i])
	}
	sort.Strings(restored)
	if diff := cmp.Diff([]string{"master", "worker-3", "worker-6", "worker-7"}, restored); diff != "" {
		t.Errorf("the facts restored (-want +got):\n%s", diff)
	}
	var facts map[string]any
	raw, err := os.ReadFile(filepath.Join(h.facts, "master"))
	must(t, err)
	must(t, json.Unmarshal(raw, &facts))
	if diff := cmp.Diff(keyed("KEYMASTER"), facts); diff != "" {
		t.Errorf("the master's facts as Ansible's cache holds them (-want +got):\n%s", diff)
	}
}

// TestRestoreRefusesASilentNodeWithoutFacts: a node outside the limit that does not answer and
// has no kept facts that hold stops the run before any playbook, naming it and what to do, in
// the log and in the pod's termination message.
func TestRestoreRefusesASilentNodeWithoutFacts(t *testing.T) {
	h := newFactsHelper(t)
	now := time.Now()
	for _, n := range factsNodes {
		if n.name != "worker-6" && n.name != "worker-7" {
			h.keep(t, n.name, entry(t, now, n.address, keyed(pinnedKey(n.name))))
		}
	}
	h.keep(t, "worker-7", entry(t, now, "127.0.0.99", keyed("KEYWORKER7"))) // gathered at another address
	stdout, stderr, status := h.run(t, "restore", "worker-2")
	want := "worker-6 (127.0.0.7) does not answer ([Errno 111] Connection refused) and no facts of it are kept that hold (no facts kept): " +
		"the run needs them; bring the node back, or take it out of the spec; " +
		"worker-7 (127.0.0.8) does not answer ([Errno 111] Connection refused) and no facts of it are kept that hold " +
		"(facts gathered at 127.0.0.99, the node is at 127.0.0.8 now): the run needs them; bring the node back, or take it out of the spec"
	if status != 3 || stdout != "" {
		t.Errorf("restore exited %d printing %q, want 3 and no nodes to gather\n%s", status, stdout, stderr)
	}
	terminated, err := os.ReadFile(h.terminated)
	must(t, err)
	if diff := cmp.Diff(want, string(terminated)); diff != "" {
		t.Errorf("the termination message (-want +got):\n%s", diff)
	}
	if !strings.Contains(stderr, "run-kubespray: worker-6 (127.0.0.7) does not answer") {
		t.Errorf("the log does not name worker-6:\n%s", stderr)
	}
}

// TestRestoreWaitsForItsLimit: with a wait (an upgrade wave's), a node of the limit that does
// not answer is waited for: one that comes back lets the run go on; one that does not refuses
// it at the end of the wait, naming it and what to do.
func TestRestoreWaitsForItsLimit(t *testing.T) {
	h := newFactsHelper(t)
	for _, n := range factsNodes {
		h.keep(t, n.name, entry(t, time.Now(), n.address, keyed(pinnedKey(n.name))))
	}
	h.env = []string{"BPA_FACTS_WAIT=3", "BPA_FACTS_POLL=0.2"}
	_, stderr, status := h.run(t, "restore", "worker-6")
	want := "worker-6 (127.0.0.7) did not answer for 3s ([Errno 111] Connection refused): the run needs it; bring it back, then argo retry, or take it out of the spec"
	if terminated, _ := os.ReadFile(h.terminated); status != 3 || string(terminated) != want {
		t.Errorf("a silent node of the limit: exit %d, termination message %q, want 3 and %q\n%s", status, terminated, want, stderr)
	}

	// worker-7 answers a second into the wait.
	h.env = []string{"BPA_FACTS_WAIT=30", "BPA_FACTS_POLL=0.2"}
	back := make(chan net.Listener, 1)
	time.AfterFunc(time.Second, func() {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.8:%d", h.ports["worker-7"]))
		if err != nil {
			t.Errorf("worker-7 back: %v", err)
		}
		back <- l
	})
	start := time.Now()
	stdout, stderr, status := h.run(t, "restore", "worker-7")
	if l := <-back; l != nil {
		l.Close()
	}
	if status != 0 || stdout != "\n" || !strings.Contains(stderr, "run-kubespray: worker-7 (127.0.0.8) does not answer ([Errno 111] Connection refused): the run waits for it, up to 30s") {
		t.Errorf("a node of the limit back within the wait: exit %d, gather %q\n%s", status, stdout, stderr)
	}
	if waited := time.Since(start); waited > 20*time.Second {
		t.Errorf("restore went on %s after the node came back", waited)
	}
}

// TestSaveKeepsWhatTheRunGathered: after a restore, save hands over only the facts the run
// wrote (not those it was given), without what may carry a secret; they read back as fresh.
func TestSaveKeepsWhatTheRunGathered(t *testing.T) {
	h := newFactsHelper(t)
	h.keep(t, "master", entry(t, time.Now().Add(-time.Hour), "127.0.0.1", keyed("KEYMASTER")))
	h.run(t, "restore", "worker-1")
	time.Sleep(10 * time.Millisecond) // past the marker's time stamp
	gathered := map[string]any{
		"ansible_default_ipv4": map[string]any{"address": "127.0.0.2"}, "ansible_ssh_host_key_ed25519_public": "KEYWORKER1",
		"main_ip": "127.0.0.2", "ansible_env": map[string]any{"TOKEN": "s3cret"}, "ansible_cmdline": map[string]any{"pw": "s3cret"},
		"ansible_proc_cmdline": "pw=s3cret", "ansible_local": map[string]any{"site": "s3cret"},
	}
	raw, err := json.Marshal(gathered)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(h.facts, "worker-1"), raw, 0o600))
	stdout, _, _ := h.run(t, "save")
	if want := "run-kubespray: the facts of 1 nodes kept for the next run: worker-1\n"; stdout != want {
		t.Errorf("save said %q, want %q", stdout, want)
	}
	out, err := os.ReadFile(h.output)
	must(t, err)
	if bytes.Contains(out, []byte("s3cret")) {
		t.Errorf("the kept facts hold a secret:\n%s", out)
	}
	kept, err := ParseKeptFacts(string(out))
	must(t, err)
	if len(kept) != 1 || kept["worker-1"].GatheredAt == "" {
		t.Fatalf("kept %v, want worker-1's facts only", kept)
	}
	zr, err := gzip.NewReader(bytes.NewReader(kept["worker-1"].Data))
	must(t, err)
	var got struct {
		Address string         `json:"address"`
		Facts   map[string]any `json:"facts"`
	}
	must(t, json.NewDecoder(zr).Decode(&got))
	want := map[string]any{"ansible_default_ipv4": map[string]any{"address": "127.0.0.2"}, "ansible_ssh_host_key_ed25519_public": "KEYWORKER1", "main_ip": "127.0.0.2"}
	if diff := cmp.Diff(want, got.Facts); diff != "" || got.Address != "127.0.0.2" {
		t.Errorf("worker-1's entry at %q (-want +got):\n%s", got.Address, diff)
	}

	// What the controller keeps of it, mounted in the next run's pod, stands for worker-1.
	data, _, changed := Merge(nil, nil, kept)
	if !changed {
		t.Fatal("the first facts kept changed nothing")
	}
	h.keep(t, "worker-1", data["worker-1"])
	stdout, _, _ = h.run(t, "restore", "worker-2,worker-6,worker-7")
	if want := "worker-3,worker-4,worker-5\n"; stdout != want {
		t.Errorf("the next run gathers %q, want %q", stdout, want)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestMerge: each node's newest facts are kept, an older or the same entry changes nothing,
// and beyond MaxKeptFactsBytes the oldest go first.
func TestMerge(t *testing.T) {
	const t1, t2, t3 = "2026-12-01T10:00:00Z", "2026-12-02T10:00:00Z", "2026-12-03T10:00:00Z"
	big := bytes.Repeat([]byte{1}, MaxKeptFactsBytes/2)
	for _, tc := range []struct {
		name        string
		data        map[string][]byte
		index       map[string]string
		runs        []KeptFacts
		wantData    map[string][]byte
		wantIndex   map[string]string
		wantChanged bool
	}{
		{name: "nothing kept yet", runs: []KeptFacts{{"master": {t1, []byte("m1")}}},
			wantData: map[string][]byte{"master": []byte("m1")}, wantIndex: map[string]string{"master": t1}, wantChanged: true},
		{name: "newer facts replace older", data: map[string][]byte{"master": []byte("m1"), "worker": []byte("w1")},
			index: map[string]string{"master": t1, "worker": t1}, runs: []KeptFacts{{"master": {t2, []byte("m2")}}, {"master": {t3, []byte("m3")}}},
			wantData: map[string][]byte{"master": []byte("m3"), "worker": []byte("w1")}, wantIndex: map[string]string{"master": t3, "worker": t1}, wantChanged: true},
		{name: "the same or older facts change nothing", data: map[string][]byte{"master": []byte("m2")}, index: map[string]string{"master": t2},
			runs:     []KeptFacts{{"master": {t2, []byte("m2")}}, {"master": {t1, []byte("m1")}}},
			wantData: map[string][]byte{"master": []byte("m2")}, wantIndex: map[string]string{"master": t2}},
		{name: "beyond the bound the oldest go", data: map[string][]byte{"a": big, "b": big}, index: map[string]string{"a": t1, "b": t2},
			runs:     []KeptFacts{{"c": {t3, []byte("c")}}},
			wantData: map[string][]byte{"b": big, "c": []byte("c")}, wantIndex: map[string]string{"b": t2, "c": t3}, wantChanged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, index, changed := Merge(tc.data, tc.index, tc.runs...)
			if diff := cmp.Diff(tc.wantData, data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantIndex, index); diff != "" {
				t.Errorf("index (-want +got):\n%s", diff)
			}
			if changed != tc.wantChanged {
				t.Errorf("changed %v, want %v", changed, tc.wantChanged)
			}
		})
	}
}

// TestParseKeptFacts: a node name that could not be a ConfigMap key, or a time that does not
// parse, is refused naming it; an empty output keeps nothing.
func TestParseKeptFacts(t *testing.T) {
	for raw, wantErr := range map[string]string{
		"":   "",
		"{}": "",
		`{"worker-1":{"gatheredAt":"2026-12-01T10:00:00Z","data":"AA=="}}`: "",
		`{"../etc":{"gatheredAt":"2026-12-01T10:00:00Z","data":"AA=="}}`:   `"../etc" is no node name`,
		`{"index.json":{"gatheredAt":"2026-12-01T10:00:00Z"}}`:             `"index.json" is no node name`,
		`{"worker-1":{"gatheredAt":"yesterday"}}`:                          `node "worker-1": gatheredAt "yesterday"`,
		`{"..":{"gatheredAt":"2026-12-01T10:00:00Z"}}`:                     `".." is no node name`,
		`[`: "kubespray-facts: unexpected end of JSON input",
	} {
		_, err := ParseKeptFacts(raw)
		if (err == nil) != (wantErr == "") || (err != nil && !strings.Contains(err.Error(), wantErr)) {
			t.Errorf("ParseKeptFacts(%q): %v, want %q", raw, err, wantErr)
		}
	}
}

// FuzzParseKeptFacts: a step's output is outside input to the controller: whatever it holds,
// what ParseKeptFacts accepts can be kept (ConfigMap keys, times that parse).
func FuzzParseKeptFacts(f *testing.F) {
	f.Add(`{"worker-1":{"gatheredAt":"2026-12-01T10:00:00Z","data":"AA=="}}`)
	f.Add(`{"a/b":{"gatheredAt":"2026-12-01T10:00:00Z"}}`)
	f.Fuzz(func(t *testing.T, raw string) {
		kept, err := ParseKeptFacts(raw)
		if err != nil {
			return
		}
		for node, e := range kept {
			if !validKey(node) || node == FactsIndexKey {
				t.Errorf("accepted the key %q", node)
			}
			if _, err := time.Parse(time.RFC3339, e.GatheredAt); err != nil {
				t.Errorf("accepted the time %q", e.GatheredAt)
			}
		}
	})
}
