// Package makefile_test checks what the Makefile's long targets hand their suites: a run that
// takes hours must not find out at its end that its test skipped.
package makefile_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEachRealClusterRunReachesItsTest runs `make e2e-cluster` for each E2E_CLUSTER in a copy of
// the Makefile whose build scripts (hack/*.sh) only name a folder and whose `go` records its
// arguments and environment: each run must select its test and set the variable without which
// that test skips (and, for the upgrade, where the older Kubernetes' downloads are). The first
// upgrade run skipped after 80 minutes of builds: the variable prefixed the suite's command
// list, so it reached the list's first command and not `go test`.
func TestEachRealClusterRunReachesItsTest(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cluster, test string
		env           []string
	}{
		{"hand", "TestRealClusterOnVirtualMachines", []string{"BPA_REAL_CLUSTER=1"}},
		{"argo", "TestRealClusterUnderArgo", []string{"BPA_REAL_CLUSTER=1"}},
		{"upgrade", "TestRealClusterUpgradeUnderArgo", []string{"BPA_REAL_DAY2=upgrade", "BPA_KUBESPRAY_DOWNLOADS_FROM=/downloads/1.33.4"}},
		{"master-added", "TestRealMasterAddedUnderArgo", []string{"BPA_REAL_DAY2=master-added"}},
		{"master-removed", "TestRealMasterRemovedUnderArgo", []string{"BPA_REAL_DAY2=master-removed"}},
		{"renewal", "TestRealCertificateRenewalUnderArgo", []string{"BPA_REAL_DAY2=renewal"}},
	} {
		t.Run(tc.cluster, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "Makefile"), string(makefile))
			for _, script := range []string{"control-plane.sh", "node-images.sh", "kubespray-image.sh", "vm-image.sh"} {
				write(t, filepath.Join(dir, "hack", script), "#!/bin/sh\necho /built/"+script+"\n")
			}
			write(t, filepath.Join(dir, "hack", "kubespray-downloads.sh"), "#!/bin/sh\necho /downloads/$1\n")
			record := filepath.Join(dir, "go.out")
			write(t, filepath.Join(dir, "fakebin", "go"), "#!/bin/sh\n{ echo \"args: $*\"; env | grep '^BPA_'; } >> "+record+"\n")
			cmd := exec.Command("make", "--no-print-directory", "-o", "test-deps", "e2e-cluster", "E2E_CLUSTER="+tc.cluster)
			cmd.Dir = dir
			// Under `make test` the outer make's flags and variables would reach this one.
			cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool {
				return strings.HasPrefix(e, "BPA_") || strings.HasPrefix(e, "PATH=") || strings.HasPrefix(e, "MAKE") || strings.HasPrefix(e, "MFLAGS=")
			})
			cmd.Env = append(cmd.Env, "PATH="+filepath.Join(dir, "fakebin")+string(os.PathListSeparator)+os.Getenv("PATH"))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("make e2e-cluster E2E_CLUSTER=%s: %v\n%s", tc.cluster, err, out)
			}
			raw, err := os.ReadFile(record)
			if err != nil {
				t.Fatalf("make e2e-cluster E2E_CLUSTER=%s ran no `go test`: %v", tc.cluster, err)
			}
			lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
			if runs := countPrefix(lines, "args: "); runs != 1 {
				t.Fatalf("make e2e-cluster E2E_CLUSTER=%s ran `go` %d times, want once:\n%s", tc.cluster, runs, raw)
			}
			if !strings.Contains(lines[0], "-run "+tc.test+" ") {
				t.Errorf("make e2e-cluster E2E_CLUSTER=%s ran %q, want -run %s", tc.cluster, lines[0], tc.test)
			}
			for _, e := range tc.env {
				if !slices.Contains(lines[1:], e) {
					t.Errorf("make e2e-cluster E2E_CLUSTER=%s: `go test`'s environment lacks %s (it has %q): %s skips", tc.cluster, e, lines[1:], tc.test)
				}
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}
