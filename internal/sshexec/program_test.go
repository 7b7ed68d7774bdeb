package sshexec

import (
	"errors"
	"strings"
	"testing"
)

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

// TestSudoRefused: sudo's own refusals (as it prints them with LC_ALL=C) are told apart from a
// command that failed: they are final, and say what the login user needs.
func TestSudoRefused(t *testing.T) {
	for _, tc := range []struct {
		stderr string
		want   bool
	}{
		{"sudo: a password is required\n", true},
		{"sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper\n", true},
		{"debian is not in the sudoers file.  This incident will be reported.\n", true}, // older sudo: no prefix
		{"sudo: debian is not in the sudoers file.\n", true},
		{"Sorry, user debian is not allowed to execute '/usr/bin/apt-get update -q' as root on node-1.\nsudo: sorry, you are not allowed to set the following environment variables: DEBIAN_FRONTEND\n", true},
		{"E: Could not get lock /var/lib/dpkg/lock-frontend\n", false},
		{"E: Unable to locate package sudo-rs\n", false},
	} {
		err := SudoRefused(&ExitError{Command: "apt-get", Status: 1, Stderr: tc.stderr})
		if (err != nil) != tc.want {
			t.Errorf("SudoRefused(%q) = %v, want refused=%v", tc.stderr, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "passwordless sudo") {
			t.Errorf("%v: does not say what the user needs", err)
		}
	}
	if SudoRefused(errors.New("sudo: a password is required")) != nil {
		t.Error("a non-exit error was taken for sudo's refusal")
	}
}
