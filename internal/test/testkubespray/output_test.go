package testkubespray

import (
	"testing"
	"time"
)

const recapOut = `TASK [kubernetes/preinstall : Stop if unknown OS] ****
fatal: [worker]: FAILED! => {"msg": "Unsupported"}
TASK [etcd : Check etcd] ****
failed: [master] (item=etcd) => {"changed": false}

PLAY RECAP *********************************************************************
master                     : ok=513  changed=119  unreachable=0    failed=0    skipped=800  rescued=0    ignored=1
worker                     : ok=376  changed=77   unreachable=0    failed=1    skipped=500  rescued=0    ignored=0
worker2                    : ok=0    changed=0    unreachable=1    failed=0    skipped=0    rescued=0    ignored=0
idle                       : ok=0    changed=0    unreachable=0    failed=0    skipped=3    rescued=0    ignored=0
`

func TestOKRecap(t *testing.T) {
	for _, c := range []struct {
		host string
		want bool
	}{
		{"master", true},
		{"worker", false},  // a task failed
		{"worker2", false}, // unreachable
		{"idle", false},    // nothing ran on it
		{"absent", false},
		{"maste", false},
	} {
		if got := OKRecap(recapOut, c.host); got != c.want {
			t.Errorf("OKRecap(%s) = %v, want %v", c.host, got, c.want)
		}
	}
}

func TestRecapAndFailures(t *testing.T) {
	if got, want := Recap(recapOut), "master : ok=513 changed=119 unreachable=0 failed=0 skipped=800 rescued=0 ignored=1; "+
		"worker : ok=376 changed=77 unreachable=0 failed=1 skipped=500 rescued=0 ignored=0; "+
		"worker2 : ok=0 changed=0 unreachable=1 failed=0 skipped=0 rescued=0 ignored=0; "+
		"idle : ok=0 changed=0 unreachable=0 failed=0 skipped=3 rescued=0 ignored=0"; got != want {
		t.Errorf("Recap:\n%s\nwant\n%s", got, want)
	}
	want := "TASK [kubernetes/preinstall : Stop if unknown OS] ****\nfatal: [worker]: FAILED! => {\"msg\": \"Unsupported\"}\n" +
		"TASK [etcd : Check etcd] ****\nfailed: [master] (item=etcd) => {\"changed\": false}"
	if got := Failures(recapOut); got != want {
		t.Errorf("Failures:\n%s\nwant\n%s", got, want)
	}
	if got := Failures("PLAY RECAP\nmaster : ok=1 failed=0\n"); got != "" {
		t.Errorf("Failures of a clean run: %q", got)
	}
}

func TestLastLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"", 3, ""},
	} {
		if got := LastLines(c.in, c.n); got != c.want {
			t.Errorf("LastLines(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestParsePackages(t *testing.T) {
	out := `ok: [master] => {
    "msg": "BPA-PACKAGES [\"conntrack\", \"ipset\", \"socat\"]"
}
ok: [worker] => {
    "msg": "BPA-PACKAGES [\"ipset\", \"apparmor\"]"
}`
	got, err := parsePackages(out)
	if err != nil || len(got) != 4 || got[0] != "apparmor" || got[3] != "socat" {
		t.Errorf("parsePackages: %v %v, want the four, sorted, once each", got, err)
	}
	if _, err := parsePackages("PLAY RECAP\n"); err == nil {
		t.Errorf("parsePackages of no answer: no error")
	}
	if _, err := parsePackages(`"msg": "BPA-PACKAGES not json"`); err == nil {
		t.Errorf("parsePackages of a broken answer: no error")
	}
}

func TestHandRunFigure(t *testing.T) {
	t.Setenv(figuresEnv, "")
	if err := RecordHandRun(HandRun{Seconds: 1}); err != nil {
		t.Fatal(err)
	}
	if h, err := RecordedHandRun(); h != nil || err != nil {
		t.Errorf("without a figures file: %v %v", h, err)
	}
	t.Setenv(figuresEnv, t.TempDir()+"/figures.json")
	if h, err := RecordedHandRun(); h != nil || err != nil {
		t.Errorf("before the run by hand: %v %v", h, err)
	}
	want := HandRun{Seconds: 2477.5, Kubespray: "v2.30.0", Measured: time.Date(2026, 11, 25, 1, 2, 3, 0, time.UTC)}
	if err := RecordHandRun(want); err != nil {
		t.Fatal(err)
	}
	got, err := RecordedHandRun()
	if err != nil || got == nil || *got != want {
		t.Errorf("recorded %+v, read %+v %v", want, got, err)
	}
}
