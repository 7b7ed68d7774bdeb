package testkubespray

import (
	"strconv"
	"strings"
	"testing"
)

func TestCheckProgress(t *testing.T) {
	line := func(playbook string, done, plays int, failed string) string {
		return "bpa-progress: " + `{"done":` + strconv.Itoa(done) + `,"failed":[` + failed + `],"play":"p","playbook":"` + playbook + `","plays":` + strconv.Itoa(plays) + `,"task":"","tasks":1,"unreachable":[]}`
	}
	for _, tc := range []struct {
		name      string
		out       []string
		succeeded bool
		err       string
	}{
		{name: "a run to its end", out: []string{line("cluster.yml", 0, 3, ""), "ok: [a]", line("cluster.yml", 2, 3, ""), line("cluster.yml", 3, 3, "")}, succeeded: true},
		{name: "facts.yml, then the limited playbook", out: []string{line("facts.yml", 0, 2, ""), line("facts.yml", 2, 2, ""), line("scale.yml", 0, 9, ""), line("scale.yml", 9, 9, "")}, succeeded: true},
		{name: "a failed run stops where it failed", out: []string{line("cluster.yml", 1, 3, ""), line("cluster.yml", 1, 3, `"a"`)}},
		{name: "a succeeded run short of its plays", out: []string{line("cluster.yml", 1, 3, "")}, succeeded: true, err: "1 of 3 plays done"},
		{name: "going back", out: []string{line("cluster.yml", 2, 3, ""), line("cluster.yml", 1, 3, "")}, err: "went back from 2 to 1"},
		{name: "no line", out: []string{"PLAY RECAP"}, err: "no progress line"},
		{name: "a line that does not parse", out: []string{"bpa-progress: {"}, err: "progress line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CheckProgress(strings.Join(tc.out, "\n"), tc.succeeded)
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("CheckProgress: %v, want an error saying %q", err, tc.err)
			}
		})
	}
}
