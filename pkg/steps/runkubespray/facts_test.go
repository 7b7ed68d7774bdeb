package runkubespray

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
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
// ansible-playbook (the helper reads the inventory through Ansible's own parser).
type factsHelper struct {
	python, script                         string
	cache, facts, inventory, known, output string
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
		known: filepath.Join(dir, "known_hosts"), output: filepath.Join(dir, "outputs", FactsFile)}
	if fields[0] == "/usr/bin/env" {
		h.python = fields[1]
	}
	for path, content := range map[string]string{
		h.script: FactsHelper,
		h.inventory: "[kube_control_plane]\nmaster ansible_host=10.0.0.1\n[kube_node]\nworker-1 ansible_host=10.0.0.2\n" +
			"worker-2 ansible_host=10.0.0.3\nworker-3 ansible_host=10.0.0.4\nworker-4 ansible_host=10.0.0.5\nworker-5 ansible_host=10.0.0.6\n" +
			"[etcd]\nmaster\n[k8s_cluster:children]\nkube_control_plane\nkube_node\n",
		h.known: "10.0.0.1 ssh-ed25519 KEYMASTER\n10.0.0.2 ssh-ed25519 KEYW1\n10.0.0.3 ssh-ed25519 KEYW2NEW\n" +
			"[10.0.0.4]:22 ssh-ed25519 KEYW3\n10.0.0.9 ssh-ed25519 KEYW4\n10.0.0.6 ssh-ed25519 KEYW5\n",
	} {
		must(t, os.WriteFile(path, []byte(content), 0o600))
	}
	must(t, os.MkdirAll(h.cache, 0o755))
	return h
}

func (h *factsHelper) run(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(h.python, append([]string{h.script}, args...)...)
	cmd.Env = append(os.Environ(), "BPA_FACTS_CACHE="+h.cache, "ANSIBLE_CACHE_PLUGIN_CONNECTION="+h.facts,
		"BPA_FACTS_INVENTORY="+h.inventory, "BPA_FACTS_KNOWN_HOSTS="+h.known, "BPA_FACTS_OUTPUT="+h.output,
		"ANSIBLE_LOCAL_TEMP="+t.TempDir(), "HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s%s", filepath.Base(h.script), args, err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
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
// every other node outside the limit is named, with why, and only fresh facts reach the cache.
func TestRestoreGathersOnlyWhatIsNotFresh(t *testing.T) {
	h := newFactsHelper(t)
	now := time.Now()
	h.keep(t, "master", entry(t, now.Add(-time.Hour), "10.0.0.1", keyed("KEYMASTER")))
	h.keep(t, "worker-1", entry(t, now.Add(-25*time.Hour), "10.0.0.2", keyed("KEYW1")))
	h.keep(t, "worker-2", entry(t, now.Add(-time.Hour), "10.0.0.3", keyed("KEYW2OLD")))
	h.keep(t, "worker-3", entry(t, now.Add(-time.Hour), "10.0.0.4", keyed("KEYW3")))
	h.keep(t, "worker-4", entry(t, now.Add(-time.Hour), "10.0.0.9", keyed("KEYW4")))
	h.keep(t, "worker-5", []byte("not gzip"))
	h.keep(t, FactsIndexKey, []byte(`{"master":"x"}`))

	stdout, stderr := h.run(t, "restore", "worker-5")
	if diff := cmp.Diff("worker-1,worker-2,worker-4\n", stdout); diff != "" {
		t.Errorf("the nodes to gather (-want +got):\n%s", diff)
	}
	wantWhy := []string{
		"run-kubespray: worker-1: facts 25h old, older than 24h: gathering them again",
		"run-kubespray: worker-2: its host key changed since its facts were gathered (reprovisioned): gathering them again",
		"run-kubespray: worker-4: facts gathered at 10.0.0.9, the node is at 10.0.0.5 now: gathering them again",
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
	if diff := cmp.Diff([]string{"master", "worker-3"}, restored); diff != "" {
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

// TestSaveKeepsWhatTheRunGathered: after a restore, save hands over only the facts the run
// wrote (not those it was given), without what may carry a secret; they read back as fresh.
func TestSaveKeepsWhatTheRunGathered(t *testing.T) {
	h := newFactsHelper(t)
	h.keep(t, "master", entry(t, time.Now().Add(-time.Hour), "10.0.0.1", keyed("KEYMASTER")))
	h.run(t, "restore", "worker-1")
	time.Sleep(10 * time.Millisecond) // past the marker's time stamp
	gathered := map[string]any{
		"ansible_default_ipv4": map[string]any{"address": "10.0.0.2"}, "ansible_ssh_host_key_ed25519_public": "KEYW1",
		"main_ip": "10.0.0.2", "ansible_env": map[string]any{"TOKEN": "s3cret"}, "ansible_cmdline": map[string]any{"pw": "s3cret"},
		"ansible_proc_cmdline": "pw=s3cret", "ansible_local": map[string]any{"site": "s3cret"},
	}
	raw, err := json.Marshal(gathered)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(h.facts, "worker-1"), raw, 0o600))
	stdout, _ := h.run(t, "save")
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
	want := map[string]any{"ansible_default_ipv4": map[string]any{"address": "10.0.0.2"}, "ansible_ssh_host_key_ed25519_public": "KEYW1", "main_ip": "10.0.0.2"}
	if diff := cmp.Diff(want, got.Facts); diff != "" || got.Address != "10.0.0.2" {
		t.Errorf("worker-1's entry at %q (-want +got):\n%s", got.Address, diff)
	}

	// What the controller keeps of it, mounted in the next run's pod, stands for worker-1.
	data, _, changed := Merge(nil, nil, kept)
	if !changed {
		t.Fatal("the first facts kept changed nothing")
	}
	h.keep(t, "worker-1", data["worker-1"])
	stdout, _ = h.run(t, "restore", "worker-2")
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
