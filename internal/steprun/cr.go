package steprun

import (
	"context"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// CRRef is how a compiled Workflow names its CR: the step reads the CR and checks that it is
// still the object, and the generation, the Workflow was compiled from.
type CRRef struct {
	Namespace, Name, UID string
	Generation           int64
}

// Validate checks the flags a step was given.
func (r CRRef) Validate() error {
	if r.Namespace == "" || r.Name == "" || r.UID == "" || r.Generation < 1 {
		return fmt.Errorf("--namespace, --name, --uid and --generation name the CR; got %q, %q, %q, %d", r.Namespace, r.Name, r.UID, r.Generation)
	}
	return nil
}

// get reads the CR and fails, finally (not retryable), when it is gone, was replaced, or has
// moved on to another generation: the Workflow is then stale, and the controller has compiled
// (or will compile) the new generation's. Steps before kubespray use it: they fail fast rather
// than act on a spec that is no longer asked for.
func get(ctx context.Context, c client.Reader, ref CRRef, obj client.Object, kind string) error {
	if err := getIncarnation(ctx, c, ref, obj, kind); err != nil {
		return err
	}
	if obj.GetGeneration() != ref.Generation {
		return fmt.Errorf("%s %s/%s has moved on to generation %d; this Workflow was compiled from generation %d", kind, ref.Namespace, ref.Name, obj.GetGeneration(), ref.Generation)
	}
	return nil
}

// getIncarnation reads the CR and fails when it is gone, being deleted or was replaced, but not
// when its spec has moved on: steps after kubespray finish what kubespray did to the cluster,
// from what the Workflow carries (compiled from the generation it ran), so the record the
// controller keeps follows what really ran.
func getIncarnation(ctx context.Context, c client.Reader, ref CRRef, obj client.Object, kind string) error {
	if err := getGranted(ctx, c, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%s %s/%s no longer exists", kind, ref.Namespace, ref.Name)
		}
		return steps.Retryable(fmt.Errorf("reading %s %s/%s: %w", kind, ref.Namespace, ref.Name, err))
	}
	if string(obj.GetUID()) != ref.UID {
		return fmt.Errorf("%s %s/%s was deleted and created again (uid %s, this Workflow's is %s)", kind, ref.Namespace, ref.Name, obj.GetUID(), ref.UID)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return fmt.Errorf("%s %s/%s is being deleted", kind, ref.Namespace, ref.Name)
	}
	return nil
}

// GrantWait bounds how long a step waits for its ServiceAccount's RoleBinding: the controller
// writes a cluster's grants alongside its first Workflow, so the first step can start a moment
// before they are in place (and RBAC's authorizer follows new bindings from a cache).
var GrantWait = 2 * time.Minute

// getGranted is the step's first read of its CR: refused as Forbidden, it is tried again until
// GrantWait has passed, saying once what it waits for.
func getGranted(ctx context.Context, c client.Reader, key types.NamespacedName, obj client.Object) error {
	deadline := time.Now().Add(GrantWait)
	delay := 100 * time.Millisecond
	for said := false; ; said = true {
		err := c.Get(ctx, key, obj)
		if !apierrors.IsForbidden(err) || time.Now().Add(delay).After(deadline) {
			return err
		}
		if !said {
			fmt.Fprintf(os.Stderr, "waiting up to %s for this step's ServiceAccount to be granted access: %v\n", GrantWait, err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}
