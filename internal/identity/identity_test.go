package identity_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/identity"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/scheme"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// TestTheControllerCanGrantTheStepIdentity writes the step identity acting as the controller's
// own ServiceAccount, bound to the generated config/rbac/role.yaml and nothing else: the API
// server's RBAC escalation check lets a subject grant only what it holds, so this fails if the
// controller's role lacks anything the step Roles grant. It also checks what was written.
func TestTheControllerCanGrantTheStepIdentity(t *testing.T) {
	ctx := context.Background()
	role := &rbacv1.ClusterRole{}
	if err := testenv.ReadManifest(filepath.Join("config", "rbac", "role.yaml"), role); err != nil {
		t.Fatal(err)
	}
	suffix := strings.ToLower(rand.String(6))
	role.Name += "-" + suffix
	controllerNS := "ctrl-" + suffix
	ns := "tenant-" + suffix
	hostsNS := "metal3-" + suffix
	for _, obj := range []client.Object{
		role,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostsNS}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "bpa-workflow-controller", Namespace: controllerNS}},
		},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + controllerNS + ":bpa-workflow-controller",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + controllerNS, "system:authenticated"},
	}
	asController, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}

	p := testutil.Provisioning(t, "provisioning-cluster-abc.yaml")
	p.Namespace = ns
	p.Spec.HostSelector = &bpav1.HostSelector{Namespaces: []string{ns, hostsNS}}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := identity.Ensure(ctx, asController, asController, p, p.HostNamespaces()); err != nil {
		t.Fatalf("the controller's own role cannot write the step identity: %v", err)
	}
	if err := identity.Ensure(ctx, asController, asController, p, p.HostNamespaces()); err != nil {
		t.Fatalf("writing it again: %v", err)
	}

	stepRole := &rbacv1.Role{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bpa-step-cluster-abc"}, stepRole); err != nil {
		t.Fatal(err)
	}
	if len(stepRole.OwnerReferences) != 1 || stepRole.OwnerReferences[0].UID != p.UID {
		t.Errorf("the step Role's owners %v, want the Provisioning", stepRole.OwnerReferences)
	}
	remote := &rbacv1.RoleBindingList{}
	if err := env.Client.List(ctx, remote, client.InNamespace(hostsNS)); err != nil || len(remote.Items) != 1 ||
		remote.Items[0].Subjects[0].Namespace != ns || remote.Items[0].Subjects[0].Name != "bpa-step-cluster-abc" {
		t.Errorf("RoleBindings in the hosts' namespace: %+v (%v), want one for the step identity", remote.Items, err)
	}
	token := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bpa-workflow-executor.service-account-token"}, token); err != nil ||
		token.Type != corev1.SecretTypeServiceAccountToken {
		t.Errorf("the executor's token Secret: %+v (%v)", token.Type, err)
	}

	if err := identity.Release(ctx, asController, p); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.List(ctx, remote, client.InNamespace(hostsNS)); err != nil || len(remote.Items) != 0 {
		t.Errorf("after Release, RoleBindings in the hosts' namespace: %d (%v)", len(remote.Items), err)
	}
}
