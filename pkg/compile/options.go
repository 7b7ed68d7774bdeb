package compile

import (
	"fmt"
	"regexp"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// Default images. They name no registry host: the site's container runtime resolves them.
const (
	DefaultStepImage      = "bpa-workflow-controller:v0.1.0"
	DefaultKubesprayImage = "quay.io/kubespray/kubespray:v2.30.0"
	// DefaultKubectlImage is `make image`'s kubectl image, which the KUD plugin pods run.
	DefaultKubectlImage = "bpa-kubectl:v1.33.13"
)

// Options is every input of the compiler besides the CR: images, service account, limits and
// the site's lease file. The compiler reads nothing else.
type Options struct {
	// StepImage runs `bpa-workflow-controller step`.
	StepImage string
	// KubesprayImage is the site's kubespray image: the site administrator's choice, used unless
	// the Provisioning names one of AllowedKubesprayImages.
	KubesprayImage string
	// AllowedKubesprayImages are the other images a Provisioning may name in
	// spec.kubespray.image; any other is refused. The kubespray pod holds the nodes' SSH key, so
	// which image runs it is the administrator's call, not a CR author's.
	AllowedKubesprayImages []string
	// KubectlImage runs the KUD plugin WorkflowTemplates (kubectl apply into the new cluster).
	KubectlImage string
	// SSHKeySecret is the site's SSH key Secret (key "ssh-privatekey", in the CR's namespace)
	// for CRs that name none in spec.ssh.secretRef; empty: "<cluster>-ssh-key".
	SSHKeySecret string
	// HostNamespaces are the namespaces, besides its own, a Provisioning may take BareMetalHosts
	// from (spec.hostSelector.namespaces); its steps are granted BareMetalHosts there.
	HostNamespaces []string
	// ProvisioningDeadlineSeconds and SoftwareDeadlineSeconds bound a Workflow's run.
	ProvisioningDeadlineSeconds int64
	SoftwareDeadlineSeconds     int64
	// Retention is how long Argo keeps finished Workflows and their pods.
	Retention Retention
	// LeaseFile is the DHCP server's lease file on the nodes' host path; empty: addresses
	// come from the BareMetalHosts' NICs.
	LeaseFile string
	// LeaseFormat is the lease file's format.
	LeaseFormat leases.Format
	// LeaseNodeSelector pins resolve-leases to the node whose host path holds LeaseFile (the
	// DHCP server's host); empty: any node, for a lease file every node has.
	LeaseNodeSelector map[string]string
	// Plugins are the KUD plugins with a WorkflowTemplate; a CR naming another is refused.
	Plugins []string
	// Kubespray is what this generation's run does (day 2: scale or remove); zero: create.
	Kubespray runkubespray.Plan
	// SoftwareNodes limits a Software Workflow to these nodes (day 2); empty: all nodes.
	SoftwareNodes []string
	// Run is the run id (RunID) the controller chose for this run; empty: RunID of the CR's
	// uid, generation and scope.
	Run string
	// SiteRegistry is the site registry (host[:port][/prefix]) install-software copies a
	// Software's binaries from; empty: a Software naming binaries is refused.
	SiteRegistry string
	// SiteRegistrySecret is the Secret, in the CR's namespace, with the registry's account
	// (username, password) and CA (ca.crt).
	SiteRegistrySecret string
	// BinaryDigests are the files the controller resolved a Software's binaries to when it
	// named the run ("role:name" → "sha256:<hex>"): the run installs these, never another.
	BinaryDigests map[string]string
	// Offline is offline mode for the Provisionings that do not say (spec.offline).
	Offline bool
	// OfflineMirror is the file server (serve-files) as the nodes reach it, http(s)://HOST[:PORT];
	// empty: offline mode is refused.
	OfflineMirror string
	// OfflineKubesprayFiles is the file set (NAME:VERSION) serving kubespray's files_repo;
	// empty: kubespray:TAG, TAG the kubespray image's.
	OfflineKubesprayFiles string
	// OfflineKUDManifests is the file set (NAME:VERSION) holding each KUD plugin's manifest as
	// PLUGIN.yaml; empty: a Provisioning with plugins is refused offline.
	OfflineKUDManifests string
}

// Retention is how long Argo keeps what a run leaves: the Workflow (its ttlStrategy) and its
// pods (its podGC). A run's outcome is recorded in its CR before Argo deletes anything, and a
// run is never started again because its Workflow is gone, so years of day-2 changes leave a
// bounded number of Workflows and pods behind.
type Retention struct {
	// SuccessSeconds and FailureSeconds keep a Workflow that succeeded, or failed, that long
	// after it finished; 0 keeps it until someone deletes it. A failed run is kept longer, for
	// `argo retry`.
	SuccessSeconds int32
	FailureSeconds int32
	// PodGC is when Argo deletes the run's pods (Argo's podGC strategies); empty: with the
	// Workflow. The default deletes each pod that succeeded, and keeps a failed step's pod, and
	// its logs, as long as its Workflow.
	PodGC wfv1.PodGCStrategy
}

// DefaultRetention keeps a succeeded run's Workflow a week and a failed one's 30 days, and
// deletes each step's pod when it succeeds.
var DefaultRetention = Retention{SuccessSeconds: 7 * 24 * 3600, FailureSeconds: 30 * 24 * 3600, PodGC: wfv1.PodGCOnPodSuccess}

// DefaultSiteRegistrySecret is the site registry Secret's name in each CR namespace (the
// chart writes it into every namespace of its values.namespaces).
const DefaultSiteRegistrySecret = "bpa-site-registry" //nolint:gosec // G101: a Secret's name, not a credential

// DefaultOptions are the compiler's defaults, with the plugins of workflows/.
func DefaultOptions(plugins []string) Options {
	return Options{
		StepImage:                   DefaultStepImage,
		KubesprayImage:              DefaultKubesprayImage,
		KubectlImage:                DefaultKubectlImage,
		SiteRegistrySecret:          DefaultSiteRegistrySecret,
		ProvisioningDeadlineSeconds: 6 * 3600,
		SoftwareDeadlineSeconds:     2 * 3600,
		Retention:                   DefaultRetention,
		Plugins:                     plugins,
	}
}

var (
	registryPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*$`)
	pathPattern     = regexp.MustCompile(`^/[A-Za-z0-9._/-]+$`)
	runPattern      = regexp.MustCompile(`^[0-9a-f]{5,63}$`)
	digestPattern   = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// ValidateOptions checks options before a manager starts with them, so a bad flag fails at
// start-up rather than on the first CR.
func ValidateOptions(o Options) error { return o.validate() }

// validate refuses options no Workflow could run with, naming the option.
func (o Options) validate() error {
	for _, check := range []func() error{o.validateImages, o.validateWorkflows, o.validateLeases, o.validateSite, o.validateRun} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateImages checks the images and the SSH key Secret the steps run with.
func (o Options) validateImages() error {
	if !bpav1.IsImageReference(o.StepImage) {
		return fmt.Errorf("options: step image %q is not an image reference", o.StepImage)
	}
	if !bpav1.IsImageReference(o.KubesprayImage) {
		return fmt.Errorf("options: kubespray image %q is not an image reference", o.KubesprayImage)
	}
	if !bpav1.IsImageReference(o.KubectlImage) {
		return fmt.Errorf("options: kubectl image %q is not an image reference", o.KubectlImage)
	}
	if o.SSHKeySecret != "" && len(validation.IsDNS1123Subdomain(o.SSHKeySecret)) > 0 {
		return fmt.Errorf("options: SSH key Secret %q is not a Secret name", o.SSHKeySecret)
	}
	for _, img := range o.AllowedKubesprayImages {
		if !bpav1.IsImageReference(img) {
			return fmt.Errorf("options: allowed kubespray image %q is not an image reference", img)
		}
	}
	return nil
}

// validateWorkflows checks the Workflows' deadlines and retention.
func (o Options) validateWorkflows() error {
	if o.ProvisioningDeadlineSeconds <= 0 || o.SoftwareDeadlineSeconds <= 0 {
		return fmt.Errorf("options: workflow deadlines must be positive")
	}
	if o.Retention.SuccessSeconds < 0 || o.Retention.FailureSeconds < 0 {
		return fmt.Errorf("options: workflow retention must not be negative (0 keeps them)")
	}
	switch o.Retention.PodGC {
	case "", wfv1.PodGCOnPodCompletion, wfv1.PodGCOnPodSuccess, wfv1.PodGCOnWorkflowCompletion, wfv1.PodGCOnWorkflowSuccess:
	default:
		return fmt.Errorf("options: pod GC %q: want one of %s, %s, %s, %s, or empty", o.Retention.PodGC,
			wfv1.PodGCOnPodCompletion, wfv1.PodGCOnPodSuccess, wfv1.PodGCOnWorkflowCompletion, wfv1.PodGCOnWorkflowSuccess)
	}
	return nil
}

// validateLeases checks where the DHCP server's leases are read.
func (o Options) validateLeases() error {
	if o.LeaseFile != "" {
		if !pathPattern.MatchString(o.LeaseFile) {
			return fmt.Errorf("options: lease file %q is not an absolute path", o.LeaseFile)
		}
		if _, err := leases.ParseFormat(string(o.LeaseFormat)); err != nil {
			return fmt.Errorf("options: %w", err)
		}
	}
	if len(o.LeaseNodeSelector) > 0 && o.LeaseFile == "" {
		return fmt.Errorf("options: a lease node selector without a lease file selects nothing")
	}
	if errs := metav1validation.ValidateLabels(o.LeaseNodeSelector, field.NewPath("leaseNodeSelector")); len(errs) > 0 {
		return fmt.Errorf("options: %w", errs.ToAggregate())
	}
	return nil
}

// validateSite checks the site registry and the offline mirror.
func (o Options) validateSite() error {
	if o.SiteRegistry != "" && !registryPattern.MatchString(o.SiteRegistry) {
		return fmt.Errorf("options: site registry %q is not host[:port][/prefix]", o.SiteRegistry)
	}
	if o.SiteRegistrySecret != "" && len(validation.IsDNS1123Subdomain(o.SiteRegistrySecret)) > 0 {
		return fmt.Errorf("options: site registry Secret %q is not a Secret name", o.SiteRegistrySecret)
	}
	if o.Offline && o.OfflineMirror == "" {
		return fmt.Errorf("options: offline mode by default needs the offline mirror")
	}
	if o.OfflineMirror != "" {
		if _, err := offline.ParseURL(o.OfflineMirror); err != nil {
			return fmt.Errorf("options: %w", err)
		}
	}
	for _, set := range []string{o.OfflineKubesprayFiles, o.OfflineKUDManifests} {
		if set == "" {
			continue
		}
		if _, err := offline.ParseFileSet(set); err != nil {
			return fmt.Errorf("options: offline mirror: %w", err)
		}
	}
	return nil
}

// validateRun checks what the controller chose for this run: the binaries' digests, the run
// id and the nodes.
func (o Options) validateRun() error {
	for key, d := range o.BinaryDigests {
		role, name, _ := strings.Cut(key, ":")
		if (role != bpav1.RoleMaster && role != bpav1.RoleWorker) || name == "" || !digestPattern.MatchString(d) {
			return fmt.Errorf("options: binary digest %s=%s: want role:name=sha256:<64 hex>", key, d)
		}
	}
	if o.Run != "" && !runPattern.MatchString(o.Run) {
		return fmt.Errorf("options: run %q is not a run id", o.Run)
	}
	for _, n := range o.SoftwareNodes {
		if len(validation.IsDNS1123Label(n)) > 0 {
			return fmt.Errorf("options: software node %q is not a DNS-1123 label", n)
		}
	}
	return nil
}

// mirror is the offline mirror for a Provisioning run with kubesprayImage, or nil when the
// Provisioning runs online. An offline Provisioning on a controller without a mirror is an
// error on spec.offline.
func (o Options) mirror(p *bpav1.Provisioning, kubesprayImage string) (*offline.Mirror, *field.Error) {
	on := o.Offline
	if p.Spec.Offline != nil {
		on = *p.Spec.Offline
	}
	path := field.NewPath("spec", "offline")
	if !on {
		return nil, nil
	}
	if o.OfflineMirror == "" {
		return nil, field.Forbidden(path, "offline mode takes kubespray's files and images from the site's mirror, and this controller has none (--offline-mirror)")
	}
	m := &offline.Mirror{URL: o.OfflineMirror}
	files := o.OfflineKubesprayFiles
	if files == "" {
		tag := imageTag(kubesprayImage)
		if tag == "" {
			return nil, field.Forbidden(path, fmt.Sprintf("kubespray image %q has no tag to name its files by: set the controller's --offline-kubespray-files", kubesprayImage))
		}
		files = "kubespray:" + tag
	}
	var err error
	if m.KubesprayFiles, err = offline.ParseFileSet(files); err != nil {
		return nil, field.Invalid(path, files, err.Error())
	}
	if o.OfflineKUDManifests != "" {
		if m.KUDManifests, err = offline.ParseFileSet(o.OfflineKUDManifests); err != nil {
			return nil, field.Invalid(path, o.OfflineKUDManifests, err.Error())
		}
	}
	return m, nil
}

// imageTag is an image reference's tag, if it has one.
func imageTag(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		return name[i+1:]
	}
	return ""
}
