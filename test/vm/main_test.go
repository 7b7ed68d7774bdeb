//go:build vm

package vm_test

import (
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
)

// TestMain stops what the suite started outside its process tree when it is interrupted
// (SIGINT, SIGTERM): the local API server (the machines die with the test by themselves).
func TestMain(m *testing.M) { testinterrupt.Main(m) }
