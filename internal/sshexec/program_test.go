package sshexec

import "testing"

// TestProgramNamesWhatRan: an error names the program, not the wrappers before it.
func TestProgramNamesWhatRan(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"'dpkg-query' '-W'", "dpkg-query"},
		{"'env' 'DEBIAN_FRONTEND=noninteractive' 'apt-get' 'install' '-y'", "apt-get"},
		{"'sudo' '-n' 'env' 'DEBIAN_FRONTEND=noninteractive' 'apt-get' 'update'", "apt-get"},
		{"'sudo' '-n' 'dnf' 'makecache'", "dnf"},
		{"command -v dpkg-query", "command"},
		{"'env'", "env"},
		{"", ""},
	} {
		if got := program(tc.line); got != tc.want {
			t.Errorf("program(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
	err := &ExitError{Command: program("'env' 'DEBIAN_FRONTEND=noninteractive' 'apt-get' 'install'"), Status: 100, Stderr: "injected\nE: Sub-process returned an error code\n"}
	if got, want := err.Error(), "apt-get exited 100: E: Sub-process returned an error code"; got != want {
		t.Errorf("ExitError = %q, want %q", got, want)
	}
}
