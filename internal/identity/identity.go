// Package identity gives each cluster's step pods the least identity their steps need, in the
// CR's namespace: a ServiceAccount, a Role and its RoleBinding per cluster, written by the
// controller with the cluster's first Workflow (the account before it). The Role reads the
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
	"sync"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
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

// Ensure writes the whole step identity of the Provisioning's cluster at once: its accounts
// (EnsureAccounts) and what they may do (EnsureGrants).
func Ensure(ctx context.Context, c client.Client, uncached client.Reader, p *bpav1.Provisioning, hostNamespaces []string) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return EnsureAccounts(ctx, c, uncached, p) })
	g.Go(func() error { return EnsureGrants(ctx, c, uncached, p, hostNamespaces) })
	return g.Wait()
}

// EnsureAccounts writes the ServiceAccounts the cluster's step pods run as: the cluster's,
// steps.StepServiceAccount(cluster) in the CR's namespace and owned by it, and the namespace's
// executor account with its long-lived token Secret. A pod naming a ServiceAccount that does
// not exist is refused, so these must be in place before the cluster's first Workflow. It
// writes only what differs. uncached reads what c's cache must not hold (Secrets).
func EnsureAccounts(ctx context.Context, c client.Client, uncached client.Reader, p *bpav1.Provisioning) error {
	name := steps.StepServiceAccount(p.Labels[bpav1.ClusterLabel])
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return writeAccount(ctx, c, p.Namespace, name, ownedBy(c, p)) })
	g.Go(func() error { return ensureExecutorAccount(ctx, c, uncached, p.Namespace) })
	return g.Wait()
}

// EnsureGrants writes what the accounts may do: a Role and RoleBinding named
// steps.StepServiceAccount(cluster) in the CR's namespace, owned by it, with host rules there
// when it takes hosts from its own namespace; a Role and RoleBinding in each other namespace
// of hostNamespaces (labelled, removed by Release); and the executor's. It writes only what
// differs, so a cluster whose grants are in place costs no write.
//
// A grant is needed only once a step calls the API, not to admit its pod, and each Role and
// RoleBinding costs the API server's RBAC escalation check (which waits for its cache of
// bindings to be current: about 100 ms on Kubernetes 1.33). The controller writes the grants
// while it creates the Workflow, not before; a step that starts before its binding is in
// place waits for it (steprun). uncached reads the namespace's executor grants when c's cache
// does not hold them yet (writeShared).
func EnsureGrants(ctx context.Context, c client.Client, uncached client.Reader, p *bpav1.Provisioning, hostNamespaces []string) error {
	cluster := p.Labels[bpav1.ClusterLabel]
	name := steps.StepServiceAccount(cluster)
	rules := StepRules(cluster)
	if slices.Contains(hostNamespaces, p.Namespace) {
		rules = append(rules, HostRules()...)
	}
	// Independent of each other, so written at once: the grants cost two round trips (a
	// Role, then its RoleBinding), not two per namespace.
	g, ctx := errgroup.WithContext(ctx)
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: p.Namespace}
	g.Go(func() error { return writeRole(ctx, c, p.Namespace, name, rules, subject, ownedBy(c, p)) })
	for _, ns := range hostNamespaces {
		if ns == p.Namespace {
			continue
		}
		g.Go(func() error {
			return writeRole(ctx, c, ns, remoteName(p.Namespace, cluster), HostRules(), subject, labelled(p.Namespace, cluster))
		})
	}
	executor := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: steps.ExecutorServiceAccount, Namespace: p.Namespace}
	g.Go(func() error {
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: steps.ExecutorServiceAccount}}
		return writeShared(ctx, c, uncached, binding, func(c client.Client) error {
			return writeRole(ctx, c, p.Namespace, steps.ExecutorServiceAccount, ExecutorRules(), executor, nil)
		})
	})
	return g.Wait()
}

// Cached are the kinds Ensure reads through the manager's cache: their informers are started
// with the manager, not on the first Provisioning, which would otherwise wait for them to sync.
func Cached() []client.Object {
	return []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}}
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

// ensureExecutorAccount writes the namespace's executor account, which EnsureGrants lets only
// report task results, and the long-lived token Secret Argo mounts into the executor of a pod
// that mounts no token of its own (Argo finds it by name).
func ensureExecutorAccount(ctx context.Context, c client.Client, uncached client.Reader, namespace string) error {
	name := steps.ExecutorServiceAccount
	// The token Secret after its ServiceAccount: Kubernetes' token controller deletes a token
	// Secret whose ServiceAccount does not exist.
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := writeShared(ctx, c, uncached, account, func(c client.Client) error {
		return writeAccount(ctx, c, namespace, name, nil)
	}); err != nil {
		return err
	}
	// One worker at a time per namespace: the others then read the Secret the first created,
	// instead of each creating it and all but one failing.
	unlock := lock(namespace + "/Secret/" + name + ".service-account-token")
	defer unlock()
	// Its metadata read uncached: reading Secrets through the manager's cache would hold every
	// Secret of the cluster in memory. A read, not a create that fails once it exists: every
	// Workflow the namespace gets passes here.
	existing := &metav1.PartialObjectMetadata{}
	existing.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := uncached.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name + ".service-account-token"}, existing)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading the executor's token Secret %s/%s: %w", namespace, name+".service-account-token", err)
	}
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
	return nil
}

// writeShared writes, through write, an object all the clusters of a namespace share (their
// executor's), which the reconciles of a burst of new clusters all find missing from the cache
// at once. In the cache, it is written as any other: only where it differs. Not there yet, one
// worker at a time reads it from the API server (uncached), and only the first creates it: the
// others' creates would be refused as it exists, each after the API server's checks (for a Role
// or RoleBinding, the escalation check's wait). obj names what to look for: the last object
// write writes (of a Role and its RoleBinding, the RoleBinding).
func writeShared(ctx context.Context, c client.Client, uncached client.Reader, obj client.Object, write func(client.Client) error) error {
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if err == nil {
		return write(c)
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	unlock := lock(obj.GetNamespace() + "/" + gvk.Kind + "/" + obj.GetName())
	defer unlock()
	return write(readingFrom{Client: c, reader: uncached})
}

// readingFrom is a client whose reads are reader's.
type readingFrom struct {
	client.Client
	reader client.Reader
}

func (c readingFrom) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

// locks serialize the writes of one shared object (namespace/Kind/name) in this process.
var locks sync.Map

func lock(key string) (unlock func()) {
	mu, _ := locks.LoadOrStore(key, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
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
