// Package installsoftware is the install-software step: on one node, over SSH, it installs or
// upgrades only the packages that differ from the Software CR for the node's role.
package installsoftware

import (
	"maps"
	"path"
	"slices"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step, its template and its DAG task.
const Name = "install-software"

// Input parameters: one node of resolve-cluster-hosts' list.
const (
	NodeParam    = "node"
	RoleParam    = "role"
	AddressParam = "ip"
)

// SiteRegistry is where install-software copies binaries from: the registry's address and the
// Secret in the CR's namespace with its account (username, password) and CA (ca.crt).
type SiteRegistry struct {
	Address string
	Secret  string //nolint:gosec // G117: a Secret's name, not its content
	// Digests are the files the controller resolved the binaries to when it named the run
	// ("role:name" → "sha256:…"): the run installs these and no other, whatever is uploaded
	// while it runs.
	Digests map[string]string
}

// Template installs the software on one node and outputs its report. With a site registry
// (a Software naming binaries) the step also gets the registry's address, its CA mounted, and
// its account as environment variables from the Secret: never a parameter.
func Template(stepImage string, registry *SiteRegistry) wfv1.Template {
	args := append(steps.CRArgs(),
		"--node={{inputs.parameters."+NodeParam+"}}",
		"--role={{inputs.parameters."+RoleParam+"}}",
		"--address={{inputs.parameters."+AddressParam+"}}",
		"--ssh-key="+steps.SSHKeyPath,
		"--output="+steps.OutputsDir+"/report.json",
	)
	mounts := []corev1.VolumeMount{steps.SSHKeyMount()}
	if registry != nil {
		args = append(args, "--registry="+registry.Address, "--ca-file="+path.Join(steps.SiteRegistryDir, steps.SiteRegistryCAKey))
		for _, key := range slices.Sorted(maps.Keys(registry.Digests)) {
			args = append(args, "--binary-digest="+key+"="+registry.Digests[key])
		}
		mounts = append(mounts, corev1.VolumeMount{Name: steps.SiteRegistryVolume, MountPath: steps.SiteRegistryDir, ReadOnly: true})
	}
	container := steps.StepContainer(stepImage, Name, args, mounts...)
	if registry != nil {
		for env, key := range map[string]string{"BPA_REGISTRY_USERNAME": "username", "BPA_REGISTRY_PASSWORD": "password"} {
			container.Env = append(container.Env, corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: registry.Secret}, Key: key,
			}}})
		}
		slices.SortFunc(container.Env, func(a, b corev1.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	}
	return wfv1.Template{
		Name: Name,
		Inputs: wfv1.Inputs{Parameters: []wfv1.Parameter{
			{Name: NodeParam}, {Name: RoleParam}, {Name: AddressParam},
		}},
		Container:     container,
		Outputs:       wfv1.Outputs{Parameters: []wfv1.Parameter{steps.OutputFile(steps.ReportParam, "report.json")}},
		RetryStrategy: steps.WaitForTheWorld(),
	}
}

// SiteRegistryVolume is the site registry Secret's CA, for the pods of Template.
func SiteRegistryVolume(secret string) corev1.Volume {
	return corev1.Volume{Name: steps.SiteRegistryVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret,
		Items:      []corev1.KeyToPath{{Key: steps.SiteRegistryCAKey, Path: steps.SiteRegistryCAKey}},
	}}}
}

// FanOut is the task that runs the step once per node of nodes, a JSON list of bpav1.Node
// (resolve-cluster-hosts' output): each pod gets the node's label, roles and address.
func FanOut(nodes string) wfv1.DAGTask {
	return wfv1.DAGTask{
		Name:      Name,
		Template:  Name,
		WithParam: nodes,
		Arguments: wfv1.Arguments{Parameters: []wfv1.Parameter{
			{Name: NodeParam, Value: wfv1.AnyStringPtr("{{item.label}}")},
			{Name: RoleParam, Value: wfv1.AnyStringPtr("{{item.role}}")},
			{Name: AddressParam, Value: wfv1.AnyStringPtr("{{item.ip}}")},
		}},
	}
}
