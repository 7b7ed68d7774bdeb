package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// ArgoAPI follows whether the API server serves Argo's Workflows. A controller started before
// Argo Workflows is installed does not fail: its CRs say ArgoNotInstalled, and the moment the
// Workflow kind is served, the controllers gain their Workflow watches and every CR is
// reconciled again. It is a leader-elected Runnable of the manager.
type ArgoAPI struct {
	discovery discovery.DiscoveryInterface
	interval  time.Duration

	served atomic.Bool
	mu     sync.Mutex
	// owners are the controllers waiting for the Workflow watch (empty once it is added).
	owners []workflowOwner
}

// workflowOwner is a controller whose CRs own Workflows.
type workflowOwner struct {
	ctrl  controller.Controller
	mgr   ctrl.Manager
	owner client.Object
	// list lists the controller's CRs, to reconcile them all once Argo is there.
	list    func(context.Context) ([]client.Object, error)
	requeue chan event.GenericEvent
}

// ArgoGroupVersion is the group and version of Argo's Workflow kind.
const ArgoGroupVersion = "argoproj.io/v1alpha1"

// argoMissing is what a CR says while Argo is not installed.
var argoMissing = summary{stalled, bpav1.ReasonArgoNotInstalled,
	"Argo Workflows is not installed: the API server serves no " + ArgoGroupVersion + " Workflow; the run starts once it is installed"}

// NewArgoAPI asks the API server once whether it serves Workflows, and polls it every interval
// from Start on while it does not.
func NewArgoAPI(d discovery.DiscoveryInterface, interval time.Duration) (*ArgoAPI, error) {
	a := &ArgoAPI{discovery: d, interval: interval}
	served, err := a.check()
	if err != nil {
		return nil, err
	}
	a.served.Store(served)
	return a, nil
}

// Served reports whether Workflows are served (and the controllers watch them).
func (a *ArgoAPI) Served() bool { return a.served.Load() }

// missing says, into the reconcile's summary, that a CR waits for Argo, while Workflows are
// not served.
func (a *ArgoAPI) missing(s *summary) bool {
	if a.Served() {
		return false
	}
	*s = argoMissing
	return true
}

// check asks discovery for the Workflow kind. Its group missing is a plain no; any other
// failure is an error.
func (a *ArgoAPI) check() (bool, error) {
	res, err := a.discovery.ServerResourcesForGroupVersion(ArgoGroupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("asking the API server for %s: %w", ArgoGroupVersion, err)
	}
	return slices.ContainsFunc(res.APIResources, func(r metav1.APIResource) bool { return r.Name == "workflows" }), nil
}

// watchWorkflows gives a controller its watch of the Workflows its CRs own: at once when they
// are served, else when Start finds them served. list lists its CRs, all reconciled again then.
func (a *ArgoAPI) watchWorkflows(mgr ctrl.Manager, c controller.Controller, owner client.Object, list func(context.Context) ([]client.Object, error)) error {
	o := workflowOwner{ctrl: c, mgr: mgr, owner: owner, list: list}
	if a.Served() {
		return o.watch()
	}
	o.requeue = make(chan event.GenericEvent)
	if err := c.Watch(source.Channel(o.requeue, &handler.EnqueueRequestForObject{})); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.owners = append(a.owners, o)
	return nil
}

// watch adds the Workflow watch: events of the Workflows a CR controls (`argo resubmit`'s
// copies keep the controller reference) go to the CR.
func (o workflowOwner) watch() error {
	return o.ctrl.Watch(source.Kind(o.mgr.GetCache(), &wfv1.Workflow{},
		handler.TypedEnqueueRequestForOwner[*wfv1.Workflow](o.mgr.GetScheme(), o.mgr.GetRESTMapper(), o.owner, handler.OnlyControllerOwner()),
		workflowChanged()))
}

// Start waits until Workflows are served, then adds the waiting watches and reconciles every
// CR of their controllers. With Workflows served from the start, it has nothing to do.
func (a *ArgoAPI) Start(ctx context.Context) error {
	if a.Served() {
		return nil
	}
	log := ctrl.LoggerFrom(ctx).WithName("argo")
	log.Info("Argo Workflows is not installed; waiting for it", "groupVersion", ArgoGroupVersion, "interval", a.interval)
	err := wait.PollUntilContextCancel(ctx, a.interval, false, func(context.Context) (bool, error) {
		served, err := a.check()
		if err != nil {
			log.Error(err, "Cannot tell whether Argo Workflows is installed; asking again")
		}
		return served, nil
	})
	if err != nil {
		return nil //nolint:nilerr // the manager is stopping
	}
	a.mu.Lock()
	owners := a.owners
	a.owners = nil
	a.mu.Unlock()
	var errs []error
	for _, o := range owners {
		errs = append(errs, o.watch())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("watching Workflows: %w", err)
	}
	a.served.Store(true)
	log.Info("Argo Workflows is installed; reconciling every CR")
	for _, o := range owners {
		objs, err := o.list(ctx)
		if err != nil {
			return fmt.Errorf("listing the CRs to reconcile once Argo Workflows is installed: %w", err)
		}
		for _, obj := range objs {
			select {
			case o.requeue <- event.GenericEvent{Object: obj}:
			case <-ctx.Done():
				return nil
			}
		}
	}
	return nil
}

// objectsOf turns listed items into objects.
func objectsOf[T any, P interface {
	*T
	client.Object
}](items []T) []client.Object {
	objs := make([]client.Object, 0, len(items))
	for i := range items {
		objs = append(objs, P(&items[i]))
	}
	return objs
}
