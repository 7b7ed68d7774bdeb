// Package compile turns a Provisioning or a Software generation into an Argo Workflow. It is
// pure and deterministic: every input is the CR or Options, the CR is never modified, and the
// same input gives byte-identical output. The Workflow names its CR (namespace, name, uid,
// generation) instead of copying its spec, so its size does not grow with the hosts; steps read
// the CR and fail fast if it has moved on.
package compile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// MaxWorkflowNameLength leaves room for the suffix `argo resubmit --memoized` appends.
const MaxWorkflowNameLength = 57

// Entry templates of the two kinds of Workflow.
const (
	ProvisionEntrypoint = "provision"
	SoftwareEntrypoint  = "install"
)

// Provisioning compiles a Provisioning into the Workflow of its run kind (runKindOf):
// discover-hosts → resolve-leases → render-inventory → pin-host-keys, the run kind's checks and
// kubespray tasks, then fetch-kubeconfig → read-certificates and each KUD plugin in CR order.
func Provisioning(in *bpav1.Provisioning, opts Options) (*wfv1.Workflow, error) {
	p := in.DeepCopy()
	a, err := admitProvisioning(p, opts)
	if err != nil {
		return nil, err
	}
	kubespray, err := runkubespray.Template(a.kubesprayImage, opts.Kubespray)
	if err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	if opts.Kubespray.Mode == runkubespray.ModeUpgrade {
		// Each wave's kubespray is bounded; the Workflow is not (provisioningWorkflow).
		kubespray.ActiveDeadlineSeconds = ptr.To(intstr.FromString(strconv.FormatInt(opts.ProvisioningDeadlineSeconds, 10)))
	}
	b, err := newProvisioningDAG(p, opts, a, kubespray)
	if err != nil {
		return nil, err
	}
	last, err := runKindOf(opts.Kubespray)(b)
	if err != nil {
		return nil, err
	}
	b.addClusterSteps(last, a.manifests)
	templates, err := b.build(ProvisionEntrypoint)
	if err != nil {
		return nil, err
	}
	return provisioningWorkflow(p, opts, a, templates), nil
}

// provisioningWorkflow wraps a Provisioning run's templates in its Workflow: the description
// Argo's UI shows, the node report on exit, the deadline and the volumes its steps mount.
func provisioningWorkflow(p *bpav1.Provisioning, opts Options, a admitted, templates []wfv1.Template) *wfv1.Workflow {
	cluster := p.Labels[bpav1.ClusterLabel]
	wf := newWorkflow(&p.ObjectMeta, "Provisioning", bpav1.WorkflowKindProvisioning, cluster, WorkflowScopeAll, opts)
	wf.Annotations = map[string]string{
		"workflows.argoproj.io/title":       fmt.Sprintf("Provision cluster %s", cluster),
		"workflows.argoproj.io/description": fmt.Sprintf("Provisioning %s/%s generation %d: %s", p.Namespace, p.Name, Generation(&p.ObjectMeta), describeProvisioning(p, opts, a.mirror)),
	}
	wf.Spec.Entrypoint = ProvisionEntrypoint
	wf.Spec.Templates = templates
	// Whatever the run's outcome, the nodes' versions are read for the status.
	wf.Spec.OnExit = reportnodes.Name
	wf.Spec.ActiveDeadlineSeconds = ptr.To(opts.ProvisioningDeadlineSeconds)
	if opts.Kubespray.Mode == runkubespray.ModeUpgrade {
		wf.Annotations[bpav1.WorkflowUpgradeAnnotation] = opts.Kubespray.KubernetesVersion
		// An upgrade runs kubespray once a wave and may wait days for an approval: the
		// deadline bounds each wave's kubespray, not the whole Workflow.
		wf.Spec.ActiveDeadlineSeconds = nil
	}
	wf.Spec.Volumes = append(wf.Spec.Volumes, sshKeyVolume(sshKeyRef(p.Spec.SSH, cluster, opts)), knownHostsVolume(cluster), reportnodes.Volume(cluster),
		runkubespray.FactsVolumeOf(cluster))
	if opts.LeaseFile != "" {
		wf.Spec.Volumes = append(wf.Spec.Volumes, corev1.Volume{Name: steps.LeasesVolume, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: opts.LeaseFile, Type: ptr.To(corev1.HostPathFile)},
		}})
	}
	return wf
}

// KubesprayImageOf is the kubespray image p's runs use: its own, or the site's.
func KubesprayImageOf(p *bpav1.Provisioning, opts Options) string {
	if p.Spec.Kubespray != nil && p.Spec.Kubespray.Image != "" {
		return p.Spec.Kubespray.Image
	}
	return opts.KubesprayImage
}

// mayNotAnswer are the nodes a run can do without, which pin-host-keys lets be silent: a
// removal's leaving nodes (a dead server is removed without them) and other workers, a
// renewal's workers and masters but the first (it renews those that answer; the kubeconfig
// comes from the first), a scale run's other workers (their
// kept facts stand for them), an upgrade's workers (each wave waits for its own). Every other
// node the run touches must answer before any host is.
func mayNotAnswer(plan runkubespray.Plan, spec *bpav1.ProvisioningSpec) []string {
	switch plan.Mode {
	case runkubespray.ModeRemove:
		// remove-node.yml is limited to the leaving nodes, with the others' kept facts; the
		// masters remove them (kubespray delegates there) and must answer.
		return sortedCopy(slices.Concat(leaving(plan), workersOf(spec, plan.Nodes)))
	case runkubespray.ModeRenewCertificates:
		var others []string
		for _, entry := range spec.Masters {
			for label := range entry {
				if label != spec.FirstMaster() {
					others = append(others, label)
				}
			}
		}
		return sortedCopy(slices.Concat(others, workersOf(spec, nil)))
	case runkubespray.ModeUpgrade:
		// Each wave waits for its own silent workers (run-kubespray, WaveWaitsForSilentNodes):
		// the waves before theirs go on. The control plane must answer.
		return workersOf(spec, nil)
	case runkubespray.ModeScale:
		// scale.yml touches only the new nodes; the others' facts are kept (a silent node's
		// last ones stand for it), and kubespray delegates to the masters, which must answer.
		return workersOf(spec, plan.Nodes)
	}
	return nil
}

// workersOf are the spec's workers but those of except, sorted.
func workersOf(spec *bpav1.ProvisioningSpec, except []string) []string {
	var workers []string
	for _, entry := range spec.Workers {
		for label := range entry {
			if !slices.Contains(except, label) {
				workers = append(workers, label)
			}
		}
	}
	return sortedCopy(workers)
}

// leaving are the nodes a remove run takes out of the cluster.
func leaving(plan runkubespray.Plan) []string {
	if plan.Mode != runkubespray.ModeRemove {
		return nil
	}
	return sortedCopy(plan.Nodes)
}

func leaseFormat(opts Options) leases.Format {
	if opts.LeaseFile == "" {
		return ""
	}
	format, _ := leases.ParseFormat(string(opts.LeaseFormat)) // validated by opts.validate
	return format
}

func describeProvisioning(p *bpav1.Provisioning, opts Options, mirror *offline.Mirror) string {
	mode := opts.Kubespray.Mode
	if mode == "" {
		mode = runkubespray.ModeCreate
	}
	desc := fmt.Sprintf("%d masters, %d workers, kubespray %s", len(p.Spec.Masters), len(p.Spec.Workers), mode)
	if len(opts.Kubespray.Nodes) > 0 {
		desc += " " + strings.Join(opts.Kubespray.Nodes, ",")
	}
	if mode == runkubespray.ModeUpgrade || mode == runkubespray.ModeRenewCertificates || opts.Kubespray.UpdateControlPlane {
		desc += ": " + opts.Kubespray.String()
	}
	if len(p.Spec.KUDPlugins) > 0 {
		desc += ", plugins " + strings.Join(p.Spec.KUDPlugins, ", ")
	}
	if mirror != nil {
		// An operator reading the Argo UI sees where an offline site's downloads come from.
		desc += ", offline from " + mirror.URL
	}
	return desc
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
