package testutil

import (
	"testing"
	"time"
)

// Within polls check until it returns nil, failing the test with its last error after 30 s:
// generous for a loaded 2-core CI machine, and still a failure, not a hang.
func Within(t testing.TB, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
