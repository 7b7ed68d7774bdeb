package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// auditPolicy logs the writes of the controller's user, and nothing else: the API server's
// own count of what the controller asked of it.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    users: [` + controllerUser + `]
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
`

// controllerUser is the user the controller processes authenticate as.
const controllerUser = "bpa-controller"

// directUser is the user of the clients that make the direct bursts' writes: it holds the
// controller's role, so that its writes pass the same RBAC checks.
const directUser = "bpa-direct"

// auditLog reads the API server's audit log.
type auditLog struct {
	path string
}

type auditEvent struct {
	Stage     string                    `json:"stage"`
	Verb      string                    `json:"verb"`
	User      struct{ Username string } `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// writes are the controller's writes in a set of namespaces, by "verb resource[/sub]", and
// whether the API server refused them, from the log's offset on; next is the offset after.
type writes struct {
	byKind  map[string]int
	refused int
	next    int64
}

func (w writes) total() int {
	n := 0
	for _, c := range w.byKind {
		n += c
	}
	return n
}

// withoutEvents is the count of writes that are not Events.
func (w writes) withoutEvents() int { return w.total() - w.events() }

func (w writes) events() int {
	n := 0
	for k, c := range w.byKind {
		if strings.HasSuffix(k, " events") {
			n += c
		}
	}
	return n
}

func (w writes) String() string {
	keys := make([]string, 0, len(w.byKind))
	for k := range w.byKind {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, w.byKind[k]))
	}
	if w.refused > 0 {
		parts = append(parts, fmt.Sprintf("refused %d", w.refused))
	}
	return strings.Join(parts, ", ")
}

// since counts the controller's writes in namespaces (all when empty) from offset on.
func (a auditLog) since(offset int64, namespaces ...string) (writes, error) {
	w := writes{byKind: map[string]int{}, next: offset}
	f, err := os.Open(a.path)
	if err != nil {
		return w, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		return w, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			// A line not finished yet is read again next time.
			return w, nil
		}
		w.next += int64(len(line))
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return w, fmt.Errorf("audit log %s: %w", a.path, err)
		}
		if e.Stage != "ResponseComplete" || e.User.Username != controllerUser || e.ObjectRef == nil {
			continue
		}
		if len(namespaces) > 0 && !contains(namespaces, e.ObjectRef.Namespace) {
			continue
		}
		if e.ResponseStatus != nil && e.ResponseStatus.Code >= 300 {
			w.refused++
			continue
		}
		key := e.Verb + " " + e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			key += "/" + e.ObjectRef.Subresource
		}
		w.byKind[key]++
	}
}

// end is the log's current size: the offset from which later writes are counted.
func (a auditLog) end() (int64, error) {
	w, err := a.since(0, "")
	return w.next, err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
