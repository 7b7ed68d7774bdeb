package placement_test

import (
	"fmt"
	"testing"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
)

// BenchmarkPlace10000Hosts1000Entries: half the entries by MAC, half by resources, over a
// site of 10,000 hosts of four sizes.
func BenchmarkPlace10000Hosts1000Entries(b *testing.B) {
	hosts := make([]metal3v1alpha1.BareMetalHost, 10000)
	for i := range hosts {
		hosts[i] = host(fmt.Sprintf("node-%05d", i), 8<<(i%4), 8192<<(i%4), fmt.Sprintf("02:00:00:00:%02x:%02x", i/256, i%256))
	}
	spec := bpav1.ProvisioningSpec{}
	for i := 0; i < 3; i++ {
		spec.Masters = append(spec.Masters, entry(fmt.Sprintf("master-%d", i), mac(fmt.Sprintf("02:00:00:00:%02x:%02x", i/256, i%256))))
	}
	for i := 3; i < 1000; i++ {
		if i%2 == 0 {
			spec.Workers = append(spec.Workers, entry(fmt.Sprintf("worker-%d", i), mac(fmt.Sprintf("02:00:00:00:%02x:%02x", i/256, i%256))))
		} else {
			spec.Workers = append(spec.Workers, entry(fmt.Sprintf("worker-%d", i), bpav1.HostRequirements{CPU: ptr.To[int32](16), Memory: ptr.To(resource.MustParse("16Gi"))}))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		placed, err := placement.Place(placement.Entries(&spec), hosts, us)
		if err != nil || len(placed) != 1000 {
			b.Fatal(err, len(placed))
		}
	}
}
