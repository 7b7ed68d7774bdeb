package runkubespray

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ProgressLinePrefix starts each line ProgressPlugin writes on the step's log; JSON follows.
const ProgressLinePrefix = "bpa-progress: "

// Progress is how far a playbook of run-kubespray is, as ProgressPlugin last reported it.
// Plays, not tasks, are counted: a playbook's plays are known when it starts, its tasks are
// not (kubespray includes most of them as it goes, and skips most of those).
type Progress struct {
	// Playbook is the file ansible-playbook runs: "cluster.yml", "facts.yml".
	Playbook string `json:"playbook"`
	// Done of Plays have ended; Done equals Plays only once the playbook ran to its end with
	// no host failed.
	Done  int32 `json:"done"`
	Plays int32 `json:"plays"`
	// Play and Task are the ones running; Task is empty between plays and at the end.
	Play string `json:"play"`
	Task string `json:"task"`
	// Tasks is how many tasks the playbook has started, skipped ones included.
	Tasks int32 `json:"tasks"`
	// Failed and Unreachable are the hosts a task failed on (not ignored, not rescued) and
	// those that could not be reached, so far.
	Failed      []string `json:"failed"`
	Unreachable []string `json:"unreachable"`
}

// Bounds of what a progress line may carry: the plugin's own (NAME_CHARS), and what a status
// can hold.
const (
	maxProgressName  = 200
	maxProgressHosts = 1000
	maxProgressCount = 1 << 20
)

// ParseProgress reads one line of the step's log. ok is false for a line that is not a
// progress line; err says what is wrong with one that is but does not hold a report: the log
// is the pod's, written by whatever the kubespray image runs, so nothing in it is trusted.
func ParseProgress(line string) (p Progress, ok bool, err error) {
	rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), ProgressLinePrefix)
	if !ok {
		return Progress{}, false, nil
	}
	dec := json.NewDecoder(strings.NewReader(rest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Progress{}, true, fmt.Errorf("progress line: %w", err)
	}
	if dec.More() {
		return Progress{}, true, fmt.Errorf("progress line: text after the report")
	}
	return p, true, p.validate()
}

func (p Progress) validate() error {
	if p.Plays < 1 || p.Plays > maxProgressCount || p.Done < 0 || p.Done > p.Plays {
		return fmt.Errorf("progress line: plays done %d of %d: want 0 <= done <= plays, plays >= 1", p.Done, p.Plays)
	}
	if p.Tasks < 0 || p.Tasks > maxProgressCount {
		return fmt.Errorf("progress line: tasks %d: want 0 to %d", p.Tasks, maxProgressCount)
	}
	for field, s := range map[string]string{"playbook": p.Playbook, "play": p.Play, "task": p.Task} {
		if err := printable(s); err != nil {
			return fmt.Errorf("progress line: %s: %w", field, err)
		}
	}
	if p.Playbook == "" {
		return fmt.Errorf("progress line: playbook: empty")
	}
	for field, hosts := range map[string][]string{"failed": p.Failed, "unreachable": p.Unreachable} {
		if len(hosts) > maxProgressHosts {
			return fmt.Errorf("progress line: %s: %d hosts, more than %d", field, len(hosts), maxProgressHosts)
		}
		for _, h := range hosts {
			if msgs := validation.IsDNS1123Label(h); len(msgs) > 0 {
				return fmt.Errorf("progress line: %s: host %q: %s", field, h, strings.Join(msgs, "; "))
			}
		}
	}
	return nil
}

// printable refuses what a status line should not carry: control characters (a newline
// would forge another log line's look in kubectl's output) and text longer than the plugin
// writes.
func printable(s string) error {
	if len(s) > maxProgressName*4 || len([]rune(s)) > maxProgressName {
		return fmt.Errorf("longer than %d characters", maxProgressName)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }); i >= 0 {
		return fmt.Errorf("character %q at %d", s[i:i+1], i)
	}
	return nil
}

// LastProgress is the newest valid progress line of a log's tail; ok is false when the tail
// holds none. A line that does not parse is passed over, the one before it stands.
func LastProgress(log []byte) (p Progress, ok bool) {
	for len(log) > 0 {
		i := bytes.LastIndexByte(log, '\n')
		line := log[i+1:]
		log = log[:max(i, 0)]
		if !bytes.HasPrefix(line, []byte(ProgressLinePrefix)) {
			continue
		}
		if p, isLine, err := ParseProgress(string(line)); isLine && err == nil {
			return p, true
		}
	}
	return Progress{}, false
}

// Summary is the progress in one short line, for a column of kubectl get: "cluster.yml 5/31
// plays: etcd : Check if etcd cluster is healthy".
func (p Progress) Summary() string {
	s := fmt.Sprintf("%s %d/%d plays", p.Playbook, p.Done, p.Plays)
	switch {
	case p.Task != "":
		s += ": " + p.Task
	case p.Play != "" && p.Done < p.Plays:
		s += ": " + p.Play
	}
	var hosts []string
	if len(p.Failed) > 0 {
		hosts = append(hosts, "failed: "+someHosts(p.Failed))
	}
	if len(p.Unreachable) > 0 {
		hosts = append(hosts, "unreachable: "+someHosts(p.Unreachable))
	}
	if len(hosts) > 0 {
		s += " (" + strings.Join(hosts, "; ") + ")"
	}
	return s
}

// summaryHosts is how many hosts a summary names before it counts the rest: a column of
// kubectl get stays readable, and the whole lists are in the status beside it.
const summaryHosts = 3

func someHosts(hosts []string) string {
	if len(hosts) <= summaryHosts {
		return strings.Join(hosts, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(hosts[:summaryHosts], ", "), len(hosts)-summaryHosts)
}
