package reportnodes

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`{"kubelets":[{"version":"v1.34.3","nodes":["master","worker-1"],"notReady":["worker-1"]}]}`, ""},
		{`{"unreadable":"no kubeconfig stored yet"}`, ""},
		{`{}`, ""},
		{`[]`, "cannot unmarshal array"},
		{`{"kubelets":[],"extra":1}`, `unknown field "extra"`},
		{`{"kubelets":[{"version":"","nodes":["a"]}]}`, `kubelet version ""`},
		{`{"kubelets":[{"version":"v1 2","nodes":["a"]}]}`, `kubelet version "v1 2"`},
		{`{"kubelets":[{"version":"v1.34.3","nodes":["a;b"]}]}`, `node "a;b"`},
		{`{"kubelets":[{"version":"v1.34.3","nodes":["a"],"notReady":["B"]}]}`, `node "B"`},
		{`{"kubelets":[{"version":"v1.34.3","nodes":["a"],"cordoned":["a"]}]}`, ""},
		{`{"kubelets":[{"version":"v1.34.3","nodes":["a"],"cordoned":["a b"]}]}`, `node "a b"`},
		{strings.Repeat(" ", MaxReportBytes+1), "at most"},
	} {
		_, err := Parse(tc.raw)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Parse(%.60q) = %v, want %q", tc.raw, err, tc.want)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		less bool
	}{{"v1.9.0", "v1.10.0", true}, {"v1.33.7", "v1.34.3", true}, {"v1.34.3", "v1.34.3", false}, {"v1.34.10", "v1.34.9", false}} {
		if got := compareVersions(tc.a, tc.b) < 0; got != tc.less {
			t.Errorf("%s < %s: %v, want %v", tc.a, tc.b, got, tc.less)
		}
	}
}

// FuzzParse: whatever a pod writes, Parse refuses it or returns names and versions that are
// safe to show, and a report it accepts survives its own encoding.
func FuzzParse(f *testing.F) {
	f.Add(`{"kubelets":[{"version":"v1.34.3","nodes":["master"]}]}`)
	f.Add(`{"unreadable":"x"}`)
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := Parse(raw)
		if err != nil {
			return
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(string(again)); err != nil {
			t.Fatalf("%q parsed, its encoding %q does not: %v", raw, again, err)
		}
	})
}
