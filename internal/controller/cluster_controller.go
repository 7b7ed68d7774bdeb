package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// Field indexes the Cluster reconciler looks Clusters up by.
const (
	provisioningCRField = "spec.provisioningCR"
	softwareCRField     = "spec.softwareCR"
)

// ClusterReconciler aggregates a cluster's Provisioning and Software into one status.
type ClusterReconciler struct {
	client.Client
	Recorder record.EventRecorder
	// MaxConcurrentReconciles is how many Clusters are reconciled at once.
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups=bpa.akraino.org,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=bpa.akraino.org,resources=clusters/status,verbs=get;patch;update

// Reconcile reads the two CRs the Cluster names and summarises them.
func (r *ClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer observeDuration("cluster", time.Now())
	c := &bpav1.Cluster{}
	if err := r.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := c.DeepCopy()

	prov := &bpav1.Provisioning{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: c.Spec.ProvisioningCR}, prov); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		prov = nil
	}
	var sw *bpav1.Software
	if c.Spec.SoftwareCR != "" {
		sw = &bpav1.Software{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: c.Spec.SoftwareCR}, sw); err != nil {
			if !apierrors.IsNotFound(err) {
				return ctrl.Result{}, err
			}
			sw = nil
		}
	}
	o := reconcileScope{summary: aggregateCluster(c, prov, sw)}
	written, err := o.writeBack(ctx, r.Client, c, before, &c.Status.Conditions, c.Generation,
		func() bool { return !equality.Semantic.DeepEqual(before.Status, c.Status) })
	if written {
		emitReadyChange(r.Recorder, c, before.Status.Conditions, c.Status.Conditions, o.summary, false)
	}
	return ctrl.Result{}, err
}

// SetupWithManager watches Clusters and the Provisionings and Software they name.
func (r *ClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &bpav1.Cluster{}, provisioningCRField, func(o client.Object) []string {
		return []string{o.(*bpav1.Cluster).Spec.ProvisioningCR}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &bpav1.Cluster{}, softwareCRField, func(o client.Object) []string {
		return []string{o.(*bpav1.Cluster).Spec.SoftwareCR}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&bpav1.Cluster{}).
		Watches(&bpav1.Provisioning{}, handler.EnqueueRequestsFromMapFunc(r.clustersNaming(provisioningCRField))).
		Watches(&bpav1.Software{}, handler.EnqueueRequestsFromMapFunc(r.clustersNaming(softwareCRField))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Named("cluster").
		Complete(r)
}

func (r *ClusterReconciler) clustersNaming(field string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list bpav1.ClusterList
		if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{field: obj.GetName()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Cannot list the Clusters naming an object", "field", field)
			return nil
		}
		return requestsFor(list.Items)
	}
}
