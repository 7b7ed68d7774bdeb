package testkubespray

import (
	"fmt"
	"slices"
	"strings"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// LastLines is the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Recap is ansible-playbook's PLAY RECAP, one line per host.
func Recap(out string) string {
	var hosts []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, " ok=") && strings.Contains(line, "failed=") {
			hosts = append(hosts, strings.Join(strings.Fields(line), " "))
		}
	}
	return strings.Join(hosts, "; ")
}

// OKRecap says whether ansible-playbook's recap has host at ok above 0, unreachable and failed
// at 0.
func OKRecap(out, host string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[0] == host && f[1] == ":" && strings.HasPrefix(f[2], "ok=") && f[2] != "ok=0" &&
			slices.Contains(f, "unreachable=0") && slices.Contains(f, "failed=0") {
			return true
		}
	}
	return false
}

// Failures is each failed task of ansible-playbook's output, with its task line.
func Failures(out string) string {
	var failed []string
	task := ""
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "TASK ["):
			task = line
		case strings.HasPrefix(line, "fatal: ") || strings.HasPrefix(line, "failed: "):
			failed = append(failed, task+"\n"+line)
		}
	}
	return strings.Join(failed, "\n")
}

// CheckProgress holds a real kubespray run's output to what run-kubespray's progress plugin
// promises (runkubespray.ProgressPlugin): every progress line parses; within one playbook the
// plays done never go back nor past its plays; and a run that succeeded ended its last
// playbook at all its plays, unless a host failed in it. It returns the reports, for the log.
func CheckProgress(out string, succeeded bool) ([]runkubespray.Progress, error) {
	var reports []runkubespray.Progress
	for _, line := range strings.Split(out, "\n") {
		p, ok, err := runkubespray.ParseProgress(line)
		if err != nil {
			return nil, fmt.Errorf("%w: %q", err, line)
		}
		if !ok {
			continue
		}
		if n := len(reports); n > 0 && reports[n-1].Playbook == p.Playbook && reports[n-1].Plays == p.Plays && p.Done < reports[n-1].Done {
			return nil, fmt.Errorf("%s went back from %d to %d plays done", p.Playbook, reports[n-1].Done, p.Done)
		}
		reports = append(reports, p)
	}
	if len(reports) == 0 {
		return nil, fmt.Errorf("no progress line in the output")
	}
	if last := reports[len(reports)-1]; succeeded && last.Done != last.Plays && len(last.Failed)+len(last.Unreachable) == 0 {
		return nil, fmt.Errorf("the run succeeded, yet its last report says %d of %d plays done", last.Done, last.Plays)
	}
	return reports, nil
}
