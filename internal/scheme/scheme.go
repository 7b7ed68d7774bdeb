// Package scheme is the one runtime.Scheme of the product: our kinds, Argo's Workflow kinds,
// metal3's BareMetalHost and the core kinds.
package scheme

import (
	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// New returns a scheme with every kind the product reads or writes.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(bpav1.AddToScheme(s))
	utilruntime.Must(wfv1.AddToScheme(s))
	utilruntime.Must(metal3v1alpha1.AddToScheme(s))
	return s
}
