package main

import (
	"context"
	"fmt"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
)

// grantControllerRole binds users to the controller's generated ClusterRole and, in
// leaseNamespace, to its leader election Role, as an install binds the controller's
// ServiceAccount.
func grantControllerRole(ctx context.Context, c client.Client, leaseNamespace string, users ...string) error {
	if err := testenv.GrantControllerRole(ctx, c, users...); err != nil {
		return err
	}
	lease := &rbacv1.Role{}
	if err := testenv.ReadManifest(filepath.Join("config", "rbac", "leader_election_role.yaml"), lease); err != nil {
		return err
	}
	lease.Namespace = leaseNamespace
	var subjects []rbacv1.Subject
	for _, user := range users {
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user})
	}
	for _, obj := range []client.Object{
		lease,
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: leaseNamespace, Name: lease.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: lease.Name},
			Subjects:   subjects,
		},
	} {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("granting the controller its leader election role: %s: %w", obj.GetName(), err)
		}
	}
	return nil
}

// grantCreate lets user create Provisionings: what the direct clients do beside the
// controller's writes.
func grantCreate(ctx context.Context, c client.Client, user string) error {
	name := "bpa-load-create-provisionings"
	for _, obj := range []client.Object{
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{bpav1.GroupVersion.Group}, Resources: []string{"provisionings"}, Verbs: []string{"create"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		},
	} {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("letting %s create Provisionings: %w", user, err)
		}
	}
	return nil
}
