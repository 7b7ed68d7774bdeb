package controller_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// TestProvisioningKeepsItsGrantsWhileItRuns: the controller writes a cluster's Role and
// RoleBinding before its first Workflow, and keeps them while the run goes on, so a grant
// whose write failed, or that someone deleted, is written again by the next reconcile.
func TestProvisioningKeepsItsGrantsWhileItRuns(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	create(t, p)
	wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)

	key := client.ObjectKey{Namespace: ns, Name: steps.StepServiceAccount("cluster-abc")}
	binding := &rbacv1.RoleBinding{}
	eventually(t, "the cluster's RoleBinding", func() error { return env.Client.Get(ctx(), key, binding) })
	if err := env.Client.Delete(ctx(), binding); err != nil {
		t.Fatal(err)
	}

	setWorkflowStatus(t, wf, func(st *wfv1.WorkflowStatus) {
		st.Phase = wfv1.WorkflowRunning
		st.StartedAt = metav1.NewTime(time.Now())
	})
	eventually(t, "the RoleBinding written again", func() error {
		again := &rbacv1.RoleBinding{}
		if err := env.Client.Get(ctx(), key, again); err != nil {
			return err
		}
		if again.UID == binding.UID {
			return fmt.Errorf("the deleted RoleBinding is still there")
		}
		if again.RoleRef.Name != key.Name || len(again.Subjects) != 1 || again.Subjects[0].Name != key.Name {
			return fmt.Errorf("RoleBinding %+v %+v", again.RoleRef, again.Subjects)
		}
		return nil
	})
	if err := env.Client.Get(ctx(), key, &rbacv1.Role{}); apierrors.IsNotFound(err) {
		t.Error("the cluster's Role is gone")
	}
}

// TestStepIdentityPrecedesTheWorkflow: a new cluster's step identity (the executor's, the
// cluster's ServiceAccount, Role and RoleBinding) is written before its Workflow exists, so no
// step waits for its permissions: in etcd's order, every object of it is older than the
// Workflow, and the step's account reads its CR.
func TestStepIdentityPrecedesTheWorkflow(t *testing.T) {
	ns := newNamespace(t)
	startManager(t)
	p := loadProvisioning(t, "provisioning-cluster-abc.yaml", ns)
	create(t, p)
	wf := waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1)
	wfRV, err := strconv.ParseInt(wf.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	name := steps.StepServiceAccount("cluster-abc")
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: steps.ExecutorServiceAccount}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: steps.ExecutorServiceAccount}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
	} {
		if err := env.Client.Get(ctx(), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatalf("%T %s: %v", obj, obj.GetName(), err)
		}
		rv, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if rv >= wfRV {
			t.Errorf("%T %s (revision %d) was written after the Workflow (revision %d)", obj, obj.GetName(), rv, wfRV)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	asStep, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := asStep.Get(ctx(), client.ObjectKeyFromObject(p), &bpav1.Provisioning{}); err != nil {
		t.Errorf("the step's account, once its Workflow exists: %v", err)
	}
}
