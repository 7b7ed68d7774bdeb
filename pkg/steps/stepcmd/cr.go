package stepcmd

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
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

// Get reads the CR and fails, finally (not retryable), when it is gone, was replaced, or has
// moved on to another generation: the Workflow is then stale, and the controller has compiled
// (or will compile) the new generation's. Steps before kubespray use it: they fail fast rather
// than act on a spec that is no longer asked for.
func Get(ctx context.Context, c client.Reader, ref CRRef, obj client.Object, kind string) error {
	if err := GetIncarnation(ctx, c, ref, obj, kind); err != nil {
		return err
	}
	if obj.GetGeneration() != ref.Generation {
		return fmt.Errorf("%s %s/%s has moved on to generation %d; this Workflow was compiled from generation %d", kind, ref.Namespace, ref.Name, obj.GetGeneration(), ref.Generation)
	}
	return nil
}

// GetIncarnation reads the CR and fails when it is gone, being deleted or was replaced, but not
// when its spec has moved on: steps after kubespray finish what kubespray did to the cluster,
// from what the Workflow carries (compiled from the generation it ran), so the record the
// controller keeps follows what really ran.
func GetIncarnation(ctx context.Context, c client.Reader, ref CRRef, obj client.Object, kind string) error {
	if err := c.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
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

// RecordEvent writes an Event about the Provisioning p, from component (the step), as the
// step's own record of what it did; the step identity may create Events.
func RecordEvent(ctx context.Context, c client.Client, p *bpav1.Provisioning, component, kind, reason, msg string) error {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, GenerateName: p.Name + "."},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: bpav1.GroupVersion.String(), Kind: "Provisioning", Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion,
		},
		Reason: reason, Message: msg, Type: kind, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: component},
	}
	return c.Create(ctx, ev)
}
