//go:build e2e

package e2e_test

import (
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
)

// TestMain stops what the suite started outside its process tree when it is interrupted
// (SIGINT, SIGTERM): the local API server, Argo's controller, the node's containerd and
// kubelet, their mounts and pods' network namespaces.
func TestMain(m *testing.M) { testinterrupt.Main(m) }
