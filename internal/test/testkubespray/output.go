package testkubespray

import (
	"slices"
	"strings"
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
