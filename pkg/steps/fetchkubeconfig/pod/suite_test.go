package pod_test

import (
	"context"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
)

var env *testenv.Env

// TestMain starts one real kube-apiserver and etcd for the step's tests.
func TestMain(m *testing.M) {
	testenv.Main(m, &env)
}

func ctx() context.Context { return context.Background() }
