// Package identity gives each cluster's step pods the least identity their steps need, in the
// CR's namespace: a ServiceAccount, a Role and its RoleBinding per cluster, written by the
// controller, in order, before the cluster's first Workflow. The Role reads the
// CRs, lists and claims BareMetalHosts only in the namespaces the CR may take hosts from, and
// reads and writes only the cluster's own Secrets and ConfigMap by name (creation cannot be
// limited by name in Kubernetes RBAC, so it is granted without names: a create reads
// nothing). Pods that never call the API (kubespray, the KUD plugins) mount no token at all;
// their Argo executor runs as a per-namespace ServiceAccount that can only report task results.
package identity

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// The controller writes the step identities, and can grant only what it holds itself (RBAC's
// escalation check): these are the rules of the Roles it writes, plus the objects.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;create;update;patch
// +kubebuilder:rbac:groups=argoproj.io,resources=workflowtaskresults,verbs=create;patch
// +kubebuilder:rbac:groups=bpa.akraino.org,resources=provisionings;softwares,verbs=get
// +kubebuilder:rbac:groups=metal3.io,resources=baremetalhosts,verbs=get;list;patch

// ManagedByLabel marks the objects this package writes.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// ManagedBy is its value.
const ManagedBy = "bpa-workflow-controller"

// StepRules are what a cluster's steps may do in the CR's namespace. hostRules are added in
// every namespace the CR takes BareMetalHosts from.
func StepRules(cluster string) []rbacv1.PolicyRule {
	secrets := []string{cluster + bpav1.KubeconfigSecretSuffix, cluster + bpav1.KnownHostsSecretSuffix}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{bpav1.GroupVersion.Group}, Resources: []string{"provisionings", "softwares"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: secrets, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{cluster + bpav1.HostsConfigMapSuffix}, Verbs: []string{"get", "update", "patch"}},
		// Creating cannot be limited by name (the name is not known when it is authorized).
		{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: []string{"create"}},
		{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflowtaskresults"}, Verbs: []string{"create", "patch"}},
		// pin-host-keys says in an Event when it pins a reprovisioned host's new key.
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	}
}

// HostRules let discover-hosts list and claim BareMetalHosts, and resolve-leases read them.
func HostRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{"metal3.io"}, Resources: []string{"baremetalhosts"}, Verbs: []string{"get", "list", "patch"}}}
}

// ExecutorRules are the Argo executor's of the pods without a token: report task results.
func ExecutorRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflowtaskresults"}, Verbs: []string{"create", "patch"}}}
}

// Ensure writes the step identity of the Provisioning's cluster, in order, before its first
// Workflow, and only what is missing or differs (read from the manager's cache, filtered to
// the objects this package writes): the namespace's executor account, its token Secret and its
// Role and RoleBinding; the cluster's ServiceAccount, owned by the Provisioning; its Role and
// RoleBinding, with host rules where it takes hosts from its own namespace; and a Role and
// RoleBinding in each other namespace of hostNamespaces (labelled, removed by Release). A pod
// naming a missing account is refused, and a step that calls the API before its binding exists
// is refused too, so all of it is in place before the Workflow exists: no step waits for its
// permissions. uncached reads what the cache must not hold (Secrets).
//
// Workers of a burst of new clusters in one namespace may all find the namespace's shared
// executor objects missing at once: all but one create is refused as already there, which is
// not an error (they write the same).
func Ensure(ctx context.Context, c client.Client, uncached client.Reader, p *bpav1.Provisioning, hostNamespaces []string) error {
	return ensure(ctx, c, uncached, p, hostNamespaces)
}

// Keep writes again, while a run goes on, what of the identity someone changed or deleted: all
// that Ensure writes but the executor's token Secret, whose check is a read from the API server
// (Secrets are not cached) that every reconcile of a running Provisioning would pay.
func Keep(ctx context.Context, c client.Client, p *bpav1.Provisioning, hostNamespaces []string) error {
	return ensure(ctx, c, nil, p, hostNamespaces)
}

// ensure is Ensure, without the token Secret when uncached is nil.
func ensure(ctx context.Context, c client.Client, uncached client.Reader, p *bpav1.Provisioning, hostNamespaces []string) error {
	if err := ensureExecutor(ctx, c, uncached, p.Namespace); err != nil {
		return err
	}
	cluster := p.Labels[bpav1.ClusterLabel]
	name := steps.StepServiceAccount(cluster)
	if err := writeAccount(ctx, c, p.Namespace, name, ownedBy(c, p)); err != nil {
		return err
	}
	rules := StepRules(cluster)
	if slices.Contains(hostNamespaces, p.Namespace) {
		rules = append(rules, HostRules()...)
	}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: p.Namespace}
	if err := writeRole(ctx, c, p.Namespace, name, rules, subject, ownedBy(c, p)); err != nil {
		return err
	}
	for _, ns := range hostNamespaces {
		if ns == p.Namespace {
			continue
		}
		if err := writeRole(ctx, c, ns, remoteName(p.Namespace, cluster), HostRules(), subject, labelled(p.Namespace, cluster)); err != nil {
			return err
		}
	}
	return nil
}

// Cached are the kinds Ensure reads through the manager's cache: their informers are started
// with the manager, not on the first Provisioning, which would otherwise wait for them to sync.
// The cache holds only the objects this package writes (CacheSelector).
func Cached() []client.Object {
	return []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}}
}

// CacheSelector selects the objects this package writes: the manager caches no other
// ServiceAccount, Role or RoleBinding of the cluster.
func CacheSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{ManagedByLabel: ManagedBy})
}

// Release removes what Ensure wrote outside the CR's namespace (what it wrote inside is owned
// by the Provisioning and goes with it).
func Release(ctx context.Context, c client.Client, p *bpav1.Provisioning) error {
	sel := client.MatchingLabels{ManagedByLabel: ManagedBy, stepOfLabel: p.Namespace + "." + p.Labels[bpav1.ClusterLabel]}
	var bindings rbacv1.RoleBindingList
	var roles rbacv1.RoleList
	if err := c.List(ctx, &bindings, sel); err != nil {
		return fmt.Errorf("listing the step identity's RoleBindings: %w", err)
	}
	if err := c.List(ctx, &roles, sel); err != nil {
		return fmt.Errorf("listing the step identity's Roles: %w", err)
	}
	var objs []client.Object
	for i := range bindings.Items {
		objs = append(objs, &bindings.Items[i])
	}
	for i := range roles.Items {
		objs = append(objs, &roles.Items[i])
	}
	for _, obj := range objs {
		if err := c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("removing %s/%s of the step identity: %w", obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// stepOfLabel says whose step identity a Role in another namespace is: "<namespace>.<cluster>".
const stepOfLabel = "bpa.akraino.org/step-identity-of"

func labelled(namespace, cluster string) func(client.Object) error {
	return func(obj client.Object) error {
		l := obj.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[stepOfLabel] = namespace + "." + cluster
		obj.SetLabels(l)
		return nil
	}
}

// ownedBy makes the Provisioning an object's controller: it goes with the Provisioning. A
// cluster's identity is named by the cluster, and only the Provisioning that holds the cluster
// writes it (the controller stops any other): one still controlled by an earlier Provisioning
// of the cluster, deleted and not yet collected, is taken over.
func ownedBy(c client.Client, p *bpav1.Provisioning) func(client.Object) error {
	return func(obj client.Object) error {
		obj.SetOwnerReferences(slices.DeleteFunc(obj.GetOwnerReferences(), func(ref metav1.OwnerReference) bool {
			return ref.Controller != nil && *ref.Controller && ref.Kind == "Provisioning" && ref.UID != p.UID
		}))
		return controllerutil.SetControllerReference(p, obj, c.Scheme())
	}
}

// remoteName names the Role in another namespace: the CR's namespace and cluster.
func remoteName(namespace, cluster string) string {
	return steps.StepServiceAccount(namespace + "." + cluster)
}

// writeAccount writes a ServiceAccount.
func writeAccount(ctx context.Context, c client.Client, namespace, name string, mutate func(client.Object) error) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := createOrUpdate(ctx, c, sa, func() error { return mark(sa, mutate) }); err != nil {
		return fmt.Errorf("writing ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return nil
}

func writeRole(ctx context.Context, c client.Client, namespace, name string, rules []rbacv1.PolicyRule, subject rbacv1.Subject, mutate func(client.Object) error) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := createOrUpdate(ctx, c, role, func() error {
		role.Rules = rules
		return mark(role, mutate)
	}); err != nil {
		return fmt.Errorf("writing Role %s/%s: %w", namespace, name, err)
	}
	// After the Role: the API server lets the controller bind only a Role it can read and
	// holds every rule of (RBAC's escalation check).
	return writeBinding(ctx, c, namespace, name, subject, mutate)
}

func writeBinding(ctx context.Context, c client.Client, namespace, name string, subject rbacv1.Subject, mutate func(client.Object) error) error {
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := createOrUpdate(ctx, c, binding, func() error {
		if binding.RoleRef.Name != "" && binding.RoleRef.Name != name {
			return fmt.Errorf("RoleBinding %s/%s refers to Role %s, not %s; delete it", namespace, name, binding.RoleRef.Name, name)
		}
		binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
		binding.Subjects = []rbacv1.Subject{subject}
		return mark(binding, mutate)
	}); err != nil {
		return fmt.Errorf("writing RoleBinding %s/%s: %w", namespace, name, err)
	}
	return nil
}

// ensureExecutor writes the namespace's executor account, the long-lived token Secret Argo
// mounts into the executor of a pod that mounts no token of its own (Argo finds it by name;
// left alone when uncached is nil), and the Role and RoleBinding that let it only report task
// results.
func ensureExecutor(ctx context.Context, c client.Client, uncached client.Reader, namespace string) error {
	name := steps.ExecutorServiceAccount
	// The token Secret after its ServiceAccount: Kubernetes' token controller deletes a token
	// Secret whose ServiceAccount does not exist.
	if err := writeAccount(ctx, c, namespace, name, nil); err != nil {
		return err
	}
	executor := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}
	if uncached == nil {
		return writeRole(ctx, c, namespace, name, ExecutorRules(), executor, nil)
	}
	// Its metadata read uncached: reading Secrets through the manager's cache would need the
	// right to list and watch every Secret of the cluster.
	existing := &metav1.PartialObjectMetadata{}
	existing.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := uncached.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name + ".service-account-token"}, existing)
	switch {
	case apierrors.IsNotFound(err):
		token := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: namespace, Name: name + ".service-account-token",
				Annotations: map[string]string{corev1.ServiceAccountNameKey: name},
				Labels:      map[string]string{ManagedByLabel: ManagedBy},
			},
			Type: corev1.SecretTypeServiceAccountToken,
		}
		if err := c.Create(ctx, token); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("writing the executor's token Secret %s/%s: %w", namespace, token.Name, err)
		}
	case err != nil:
		return fmt.Errorf("reading the executor's token Secret %s/%s: %w", namespace, name+".service-account-token", err)
	}
	return writeRole(ctx, c, namespace, name, ExecutorRules(), executor, nil)
}

// createOrUpdate is controllerutil.CreateOrUpdate, but an object created by someone else
// between the read and the create (another worker writing the namespace's executor identity)
// is not an error: they write the same, and any difference is corrected by the next reconcile.
func createOrUpdate(ctx context.Context, c client.Client, obj client.Object, mutate controllerutil.MutateFn) error {
	_, err := controllerutil.CreateOrUpdate(ctx, c, obj, mutate)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func mark(obj client.Object, mutate func(client.Object) error) error {
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[ManagedByLabel] = ManagedBy
	obj.SetLabels(l)
	if mutate == nil {
		return nil
	}
	return mutate(obj)
}
