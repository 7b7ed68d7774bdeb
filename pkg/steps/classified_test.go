package steps_test

import (
	"errors"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// TestClassified: a failure waiting cannot cure makes the whole final, and every failure is
// named; only failures that are all curable are retryable.
func TestClassified(t *testing.T) {
	lock, gone := errors.New("lock held"), errors.New("no such package")
	for _, tc := range []struct {
		name           string
		final, waiting []error
		wantNil, retry bool
	}{
		{name: "none", wantNil: true},
		{name: "waiting only", waiting: []error{lock}, retry: true},
		{name: "final beside waiting", final: []error{gone}, waiting: []error{lock}},
		{name: "final only", final: []error{gone}},
	} {
		err := steps.Classified(tc.final, tc.waiting)
		if (err == nil) != tc.wantNil || (err != nil && steps.IsRetryable(err) != tc.retry) {
			t.Errorf("%s: %v (retryable %v), want retryable=%v", tc.name, err, steps.IsRetryable(err), tc.retry)
		}
		for _, e := range append(tc.final, tc.waiting...) {
			if !errors.Is(err, e) {
				t.Errorf("%s: %v does not name %v", tc.name, err, e)
			}
		}
	}
}
