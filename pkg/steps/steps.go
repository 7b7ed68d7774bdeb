// Package steps holds what every step of a compiled Workflow shares: the names of workflow
// parameters, volumes and paths, the hardened container a step runs in, and the retry policy
// of steps that wait for the world. Each step lives in a package of its own below this one,
// with its Argo template constructor (pure, no side effects) and its runtime.
package steps

import (
	"errors"
	"path"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Workflow parameters: the Workflow names its CR instead of copying its spec.
const (
	ParamNamespace  = "cr-namespace"
	ParamName       = "cr-name"
	ParamUID        = "cr-uid"
	ParamGeneration = "cr-generation"
	ParamCluster    = "cluster"
)

// WorkflowParam is the expression a template uses to read a workflow parameter.
func WorkflowParam(name string) string { return "{{workflow.parameters." + name + "}}" }

// CRArgs are the flags by which a step finds its CR and checks it has not moved on.
func CRArgs() []string {
	return []string{
		"--namespace=" + WorkflowParam(ParamNamespace),
		"--name=" + WorkflowParam(ParamName),
		"--uid=" + WorkflowParam(ParamUID),
		"--generation=" + WorkflowParam(ParamGeneration),
	}
}

// Volumes and where steps see them.
const (
	// TmpVolume is the writable scratch space of a step; the root filesystem is read-only.
	TmpVolume = "tmp"
	TmpDir    = "/tmp"
	// OutputsDir holds the files Argo reads output parameters from.
	OutputsDir = "/tmp/outputs"
	// InputsDir holds input parameters that Argo writes as raw artifacts: too large for
	// command-line arguments.
	InputsDir = "/inputs"

	// SSHKeyVolume is the node SSH key, mounted only into the steps that log in to nodes.
	SSHKeyVolume = "ssh-key"
	SSHKeyDir    = "/etc/bpa/ssh"
	SSHKeyFile   = "id"

	// KnownHostsVolume is the cluster's pinned host keys (Secret "<cluster>-known-hosts", key
	// known_hosts, in OpenSSH's format), mounted read-only into run-kubespray.
	KnownHostsVolume = "known-hosts"
	KnownHostsDir    = "/etc/bpa/known-hosts"
	KnownHostsKey    = "known_hosts"

	// SiteRegistryVolume is the CA of the site registry (key ca.crt of the site registry
	// Secret), mounted read-only into install-software when a Software names binaries.
	SiteRegistryVolume = "site-registry"
	SiteRegistryDir    = "/etc/bpa/site-registry"
	SiteRegistryCAKey  = "ca.crt"

	// LeasesVolume is the DHCP server's lease file, mounted read-only into resolve-leases.
	LeasesVolume = "dhcp-leases"
	LeasesFile   = "/var/lib/bpa/dhcp.leases"
)

// SSHKeyPath is where a step finds the SSH private key.
var SSHKeyPath = path.Join(SSHKeyDir, SSHKeyFile)

// KnownHostsPath is where run-kubespray finds the pinned host keys.
var KnownHostsPath = path.Join(KnownHostsDir, KnownHostsKey)

// Names of the parameters steps pass along.
const (
	HostsParam     = "hosts"
	InventoryParam = "inventory"
	ExtraVarsParam = "extra-vars"
	NodesParam     = "nodes"
	ReportParam    = "report"
)

// StepServiceAccount runs the step pods of a cluster: the controller gives it a Role that
// reaches only that cluster's Secrets and ConfigMap, in the CR's namespace.
func StepServiceAccount(cluster string) string { return "bpa-step-" + cluster }

// ExecutorServiceAccount runs Argo's executor in the pods that mount no token of their own
// (run-kubespray, the KUD plugins): it may only report task results. One per namespace.
const ExecutorServiceAccount = "bpa-workflow-executor"

// NoToken keeps a pod's ServiceAccount token out of its containers; Argo's executor (init and
// wait containers) still reports through ExecutorServiceAccount's token.
func NoToken(t *wfv1.Template) {
	t.AutomountServiceAccountToken = ptr.To(false)
	t.Executor = &wfv1.ExecutorConfig{ServiceAccountName: ExecutorServiceAccount}
}

// StepUser is the uid and gid step containers run as.
const StepUser int64 = 65532

// Container is a step container: the given image, command and args, no privileges, a
// read-only root filesystem and a writable /tmp.
func Container(image string, command, args []string, mounts ...corev1.VolumeMount) *corev1.Container {
	return &corev1.Container{
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         command,
		Args:            args,
		VolumeMounts:    append([]corev1.VolumeMount{{Name: TmpVolume, MountPath: TmpDir}}, mounts...),
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		Env: []corev1.EnvVar{{Name: "HOME", Value: TmpDir}},
	}
}

// StepContainer runs `bpa-workflow-controller step NAME ARGS...` from the step image.
func StepContainer(image, name string, args []string, mounts ...corev1.VolumeMount) *corev1.Container {
	return Container(image, []string{"bpa-workflow-controller"}, append([]string{"step", name}, args...), mounts...)
}

// SSHKeyMount mounts the SSH key Secret read-only.
func SSHKeyMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: SSHKeyVolume, MountPath: SSHKeyDir, ReadOnly: true}
}

// KnownHostsMount mounts the pinned host keys read-only.
func KnownHostsMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: KnownHostsVolume, MountPath: KnownHostsDir, ReadOnly: true}
}

// HostsFile is where a step taking the hosts parameter finds it.
var HostsFile = path.Join(InputsDir, "hosts.json")

// HostsInput takes the hosts parameter (placed, or addressed, hosts as JSON) as the file
// HostsFile: too large for a command-line argument.
func HostsInput() wfv1.Inputs {
	return wfv1.Inputs{
		Parameters: []wfv1.Parameter{{Name: HostsParam}},
		Artifacts:  []wfv1.Artifact{InputFile(HostsParam, path.Base(HostsFile))},
	}
}

// OutputFile is an output parameter read from a file under OutputsDir.
func OutputFile(name, file string) wfv1.Parameter {
	return wfv1.Parameter{Name: name, ValueFrom: &wfv1.ValueFrom{Path: path.Join(OutputsDir, file)}}
}

// OptionalOutputFile is OutputFile, empty when the step ended before writing the file (a
// failed attempt), where Argo would fail the step for the missing file.
func OptionalOutputFile(name, file string) wfv1.Parameter {
	p := OutputFile(name, file)
	p.ValueFrom.Default = wfv1.AnyStringPtr("")
	return p
}

// InputFile passes an input parameter to the container as a file under InputsDir.
func InputFile(param, file string) wfv1.Artifact {
	return wfv1.Artifact{
		Name: param + "-file",
		Path: path.Join(InputsDir, file),
		ArtifactLocation: wfv1.ArtifactLocation{
			Raw: &wfv1.RawArtifact{Data: "{{inputs.parameters." + param + "}}"},
		},
	}
}

// WaitForTheWorld is the retry policy of steps that wait for something outside the Workflow:
// hosts still provisioning, a DHCP lease not yet taken, a node not yet answering SSH. It backs
// off from 30 s to 10 min, for about an hour in all.
//
// Only retryable failures (ExitRetryable) and pods Argo lost are retried: a CR that moved on to
// another generation fails at once.
func WaitForTheWorld() *wfv1.RetryStrategy {
	return &wfv1.RetryStrategy{
		Limit:       ptr.To(intstr.FromInt32(10)),
		RetryPolicy: wfv1.RetryPolicyAlways,
		Expression:  retryExpression,
		Backoff: &wfv1.Backoff{
			Duration:    "30s",
			Factor:      ptr.To(intstr.FromInt32(2)),
			MaxDuration: "1h",
			Cap:         "10m",
		},
	}
}

// RetryFlakes is the retry policy of long steps that are safe to rerun but whose failures are
// mostly real: one more try after a minute.
func RetryFlakes() *wfv1.RetryStrategy {
	return &wfv1.RetryStrategy{
		Limit:       ptr.To(intstr.FromInt32(1)),
		RetryPolicy: wfv1.RetryPolicyAlways,
		Backoff:     &wfv1.Backoff{Duration: "1m"},
	}
}

// ExitRetryable is the exit code of a step that failed for a reason waiting can cure (a host
// still provisioning, a lease not yet taken, a node not answering SSH yet): EX_TEMPFAIL. Only
// these failures, and pods Argo itself lost, are retried; any other failure is final at once.
const ExitRetryable = 75

// retryExpression is the Argo retry condition matching ExitRetryable.
const retryExpression = "lastRetry.status == 'Error' || asInt(lastRetry.exitCode) == 75"

// RetryableError marks a step failure that waiting can cure. Its message is the failure's
// alone: the exit code says it is retried, and the message reaches the CR's status, where a
// marker would only be noise.
type RetryableError struct{ Err error }

func (e *RetryableError) Error() string { return e.Err.Error() }
func (e *RetryableError) Unwrap() error { return e.Err }

// Retryable marks err as curable by waiting; nil stays nil.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &RetryableError{Err: err}
}

// Classified joins the failures of a step that tried every node or binary: final when any of
// them is (waiting cannot cure it, whatever else waiting could), else retryable; nil when there
// are none.
func Classified(final, waiting []error) error {
	switch {
	case len(final) > 0:
		return errors.Join(append(final, waiting...)...)
	case len(waiting) > 0:
		return Retryable(errors.Join(waiting...))
	}
	return nil
}

// IsRetryable reports whether err is marked retryable.
func IsRetryable(err error) bool {
	var r *RetryableError
	return errors.As(err, &r)
}
