package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stream is go test -json's output for a package with a test that passes, one that skips
// saying why, one that fails, then a package that does not build.
const stream = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestOK"}
{"Action":"output","Package":"p","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"pass","Package":"p","Test":"TestOK"}
{"Action":"run","Package":"p","Test":"TestSkip"}
{"Action":"output","Package":"p","Test":"TestSkip","Output":"    x_test.go:12: ansible-playbook is missing: run hack/install-test-deps.sh\n"}
{"Action":"output","Package":"p","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestSkip"}
{"Action":"run","Package":"p","Test":"TestBad"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"    x_test.go:20: got 1, want 2\n"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestBad"}
{"Action":"output","Package":"p","Output":"FAIL\n"}
{"Action":"fail","Package":"p"}
# q
q/q.go:3:1: syntax error
{"Action":"output","Package":"q","Output":"FAIL\tq [build failed]\n"}
{"Action":"fail","Package":"q"}
`

func TestFilter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		verbose bool
		out     string
	}{
		{"quiet", false, "    x_test.go:20: got 1, want 2\n--- FAIL: TestBad (0.00s)\nFAIL\n# q\nq/q.go:3:1: syntax error\nFAIL\tq [build failed]\n"},
		{"verbose", true, "=== RUN   TestOK\n    x_test.go:12: ansible-playbook is missing: run hack/install-test-deps.sh\n--- SKIP: TestSkip (0.00s)\n" +
			"    x_test.go:20: got 1, want 2\n--- FAIL: TestBad (0.00s)\nFAIL\n# q\nq/q.go:3:1: syntax error\nFAIL\tq [build failed]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			got, err := filter(strings.NewReader(stream), &out, tc.verbose)
			if err != nil {
				t.Fatal(err)
			}
			want := &Summary{Passed: 1, Failed: 1, Skipped: 1,
				Skips:  []string{"p TestSkip: ansible-playbook is missing: run hack/install-test-deps.sh"},
				Broken: []string{"q"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.out, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	for suite, s := range map[string]*Summary{
		"unit": {Passed: 10, Skipped: 1, Skips: []string{"p TestSkip: why"}},
		"e2e":  {Passed: 3, Failed: 1, Broken: []string{"q"}},
	} {
		if err := s.save(dir, suite); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := report(&out, dir, "unit", "e2e", "vms"); err != nil {
		t.Fatal(err)
	}
	want := "=== what ran, suite by suite\n" +
		"e2e              3 passed, 1 failed, 0 skipped\n" +
		"             package failed outside its tests: q\n" +
		"unit            10 passed, 0 failed, 1 skipped\n" +
		"             skipped p TestSkip: why\n" +
		"vms          not run\n" +
		"13 passed, 2 failed, 1 skipped\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if err := report(&out, t.TempDir()); err == nil {
		t.Error("a report of no suite passed")
	}
}

// FuzzFilter: whatever a test prints, the filter neither fails nor loses a line that is not
// JSON.
func FuzzFilter(f *testing.F) {
	f.Add(stream)
	f.Add("{\"Action\":\"output\"\n")
	f.Fuzz(func(t *testing.T, in string) {
		var out bytes.Buffer
		if _, err := filter(strings.NewReader(in), &out, false); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(in, "\n") {
			if l != "" && l[0] != '{' && !strings.Contains(out.String(), l) {
				t.Fatalf("lost the line %q", l)
			}
		}
	})
}
