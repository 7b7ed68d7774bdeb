package testcluster

import (
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubesprayreleases"
)

// TestTheDefaultImageIsTheTestedRelease: the product's default --kubespray-image is upstream's
// image of the release the real-cluster suites run (built here from ../shared/third_party at
// KubesprayVersion), so a site that keeps the default runs what was tested; moving one
// without the other fails here.
func TestTheDefaultImageIsTheTestedRelease(t *testing.T) {
	if want := "quay.io/kubespray/kubespray:" + KubesprayVersion; compile.DefaultKubesprayImage != want {
		t.Errorf("the default kubespray image is %s, want upstream's image of the tested release, %s", compile.DefaultKubesprayImage, want)
	}
	r, ok := kubesprayreleases.OfImage(compile.DefaultKubesprayImage)
	if !ok || r.Version != KubesprayVersion {
		t.Errorf("the default kubespray image %s is not a release the product knows as %s (%s)", compile.DefaultKubesprayImage, KubesprayVersion, kubesprayreleases.Known())
	}
}
