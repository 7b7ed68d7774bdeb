// Package resolveleases is the resolve-leases step: it gives every placed host the IP of its
// MAC, from the DHCP server's lease file or from the BareMetalHosts' inspected NICs.
package resolveleases

import (
	"maps"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step, its template and its DAG task.
const Name = "resolve-leases"

// Template resolves the hosts' IPs. With a lease format it reads the lease file mounted at
// steps.LeasesFile; without, the BareMetalHosts' NICs. It retries with backoff while a host
// has no address yet. nodeSelector, with a lease file, pins it to the DHCP server's node.
func Template(stepImage string, leaseFormat leases.Format, nodeSelector map[string]string) wfv1.Template {
	args := append(steps.CRArgs(),
		"--hosts="+steps.HostsFile,
		"--output="+steps.OutputsDir+"/hosts.json",
	)
	var mounts []corev1.VolumeMount
	if leaseFormat != "" {
		args = append(args, "--leases="+steps.LeasesFile, "--lease-format="+string(leaseFormat))
		mounts = append(mounts, corev1.VolumeMount{Name: steps.LeasesVolume, MountPath: steps.LeasesFile, ReadOnly: true})
	}
	t := wfv1.Template{
		Name:          Name,
		Inputs:        steps.HostsInput(),
		Container:     steps.StepContainer(stepImage, Name, args, mounts...),
		Outputs:       wfv1.Outputs{Parameters: []wfv1.Parameter{steps.OutputFile(steps.HostsParam, "hosts.json")}},
		RetryStrategy: steps.WaitForTheWorld(),
	}
	if leaseFormat != "" && len(nodeSelector) > 0 {
		t.NodeSelector = maps.Clone(nodeSelector)
	}
	return t
}
