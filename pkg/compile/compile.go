// Package compile turns a Provisioning or a Software generation into an Argo Workflow. It is
// pure and deterministic: every input is the CR or Options, the CR is never modified, and the
// same input gives byte-identical output. The Workflow names its CR (namespace, name, uid,
// generation) instead of copying its spec, so its size does not grow with the hosts; steps read
// the CR and fail fast if it has moved on.
package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checketcdmembers"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checkleavingnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checksitemirror"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/fetchkubeconfig"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/kudplugin"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/readcertificates"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveclusterhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveleases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// MaxWorkflowNameLength leaves room for the suffix `argo resubmit --memoized` appends.
const MaxWorkflowNameLength = 57

// Entry templates of the two kinds of Workflow.
const (
	ProvisionEntrypoint = "provision"
	SoftwareEntrypoint  = "install"
)

// Provisioning compiles a Provisioning into the Workflow of DESIGN.md:
// discover-hosts → resolve-leases → render-inventory → run-kubespray → fetch-kubeconfig →
// each KUD plugin in CR order.
func Provisioning(in *bpav1.Provisioning, opts Options) (*wfv1.Workflow, error) {
	p := in.DeepCopy()
	if errs := p.Validate(); len(errs) > 0 {
		return nil, &bpav1.InvalidError{Kind: "Provisioning", Namespace: p.Namespace, Name: p.Name, Errs: errs}
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	for i, plugin := range p.Spec.KUDPlugins {
		if !slices.Contains(opts.Plugins, plugin) {
			errs = append(errs, field.NotSupported(field.NewPath("spec", "KUDPlugins").Index(i), plugin, sortedCopy(opts.Plugins)))
		}
	}
	for i, ns := range p.HostNamespaces() {
		if ns != p.Namespace && !slices.Contains(opts.HostNamespaces, ns) {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "hostSelector", "namespaces").Index(i), fmt.Sprintf(
				"namespace %q is neither the Provisioning's own nor one the site administrator allows hosts to be taken from (%v)", ns, sortedCopy(opts.HostNamespaces))))
		}
	}
	kubesprayImage := KubesprayImageOf(p, opts)
	if kubesprayImage != opts.KubesprayImage {
		if !slices.Contains(opts.AllowedKubesprayImages, kubesprayImage) {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "kubespray", "image"), fmt.Sprintf(
				"image %q is not one the site administrator allows for kubespray (the default %s, or one of %v)",
				kubesprayImage, opts.KubesprayImage, sortedCopy(opts.AllowedKubesprayImages))))
		}
	}
	mirror, ferr := opts.mirror(p, kubesprayImage)
	if ferr != nil {
		errs = append(errs, ferr)
	}
	manifests := map[string]string{}
	for i, plugin := range p.Spec.KUDPlugins {
		if mirror == nil {
			break
		}
		url, err := mirror.PluginManifest(plugin)
		if err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "KUDPlugins").Index(i), err.Error()))
			break
		}
		manifests[plugin] = url
	}
	if len(errs) > 0 {
		return nil, &bpav1.InvalidError{Kind: "Provisioning", Namespace: p.Namespace, Name: p.Name, Errs: errs}
	}
	cluster := p.Labels[bpav1.ClusterLabel]
	kubespray, err := runkubespray.Template(kubesprayImage, opts.Kubespray)
	if err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	if opts.Kubespray.Mode == runkubespray.ModeUpgrade {
		// Each wave's kubespray is bounded; the Workflow is not (see below).
		kubespray.ActiveDeadlineSeconds = ptr.To(intstr.FromString(strconv.FormatInt(opts.ProvisioningDeadlineSeconds, 10)))
	}

	d := newDAG()
	for _, t := range []wfv1.Template{
		discoverhosts.Template(opts.StepImage, leaving(opts.Kubespray)),
		resolveleases.Template(opts.StepImage, leaseFormat(opts), opts.LeaseNodeSelector),
		renderinventory.Template(opts.StepImage, mirror, opts.Kubespray.KubernetesVersion, renderinventory.Groups{ControlPlane: opts.Kubespray.ControlPlane, Etcd: opts.Kubespray.Etcd}),
		pinhostkeys.Template(opts.StepImage),
		kubespray,
		fetchkubeconfig.Template(opts.StepImage, p.Spec.FirstMaster(), p.Spec.SSH.LoginUser(), leaving(opts.Kubespray)),
		readcertificates.Template(opts.StepImage, p.Spec.SSH.LoginUser(), leaving(opts.Kubespray)),
		reportnodes.Template(opts.StepImage),
	} {
		if err := d.addTemplate(t); err != nil {
			return nil, err
		}
	}
	hostsOf := func(task string) wfv1.Arguments {
		return wfv1.Arguments{Parameters: []wfv1.Parameter{outputOf(task, steps.HostsParam, steps.HostsParam)}}
	}
	d.addTask(wfv1.DAGTask{Name: discoverhosts.Name, Template: discoverhosts.Name})
	d.addTask(wfv1.DAGTask{Name: resolveleases.Name, Template: resolveleases.Name, Arguments: hostsOf(discoverhosts.Name)}, discoverhosts.Name)
	d.addTask(wfv1.DAGTask{Name: renderinventory.Name, Template: renderinventory.Name, Arguments: hostsOf(resolveleases.Name)}, resolveleases.Name)
	kubesprayArgs := []wfv1.Parameter{
		outputOf(renderinventory.Name, steps.InventoryParam, steps.InventoryParam),
		outputOf(renderinventory.Name, steps.ExtraVarsParam, steps.ExtraVarsParam),
	}
	// Offline, the site's mirror must hold everything kubespray will fetch: asked before any
	// host is touched (nothing connects to a node until the check passes).
	touchHostsAfter := []string{resolveleases.Name}
	if mirror != nil {
		for _, t := range []wfv1.Template{checksitemirror.ListTemplate(kubesprayImage), checksitemirror.Template(opts.StepImage, mirror.URL)} {
			if err := d.addTemplate(t); err != nil {
				return nil, err
			}
		}
		d.addTask(wfv1.DAGTask{Name: checksitemirror.ListName, Template: checksitemirror.ListName, Arguments: wfv1.Arguments{Parameters: kubesprayArgs}}, renderinventory.Name)
		d.addTask(wfv1.DAGTask{Name: checksitemirror.Name, Template: checksitemirror.Name, Arguments: wfv1.Arguments{Parameters: []wfv1.Parameter{
			outputOf(checksitemirror.ListName, checksitemirror.DownloadsParam, checksitemirror.DownloadsParam),
		}}}, checksitemirror.ListName)
		touchHostsAfter = append(touchHostsAfter, checksitemirror.Name)
	}
	// Every node's host key is pinned before kubespray connects to any, so that its SSH
	// sessions verify them strictly.
	d.addTask(wfv1.DAGTask{Name: pinhostkeys.Name, Template: pinhostkeys.Name, Arguments: hostsOf(resolveleases.Name)}, touchHostsAfter...)
	kubesprayAfter := []string{renderinventory.Name, pinhostkeys.Name}
	if gone := leaving(opts.Kubespray); len(gone) > 0 {
		// A leaving node that does not answer is removed without a reset: asked beside the
		// pinning, which waits for no leaving node whose key it has.
		if err := d.addTemplate(checkleavingnodes.Template(opts.StepImage, gone)); err != nil {
			return nil, err
		}
		d.addTask(wfv1.DAGTask{Name: checkleavingnodes.Name, Template: checkleavingnodes.Name, Arguments: hostsOf(resolveleases.Name)}, touchHostsAfter...)
		kubesprayArgs = append(kubesprayArgs, outputOf(checkleavingnodes.Name, runkubespray.RemovalVarsParam, runkubespray.RemovalVarsParam))
		kubesprayAfter = append(kubesprayAfter, checkleavingnodes.Name)
	}
	// The addressed hosts, every step after resolve-leases reads.
	resolvedHosts := outputOf(resolveleases.Name, steps.HostsParam, steps.HostsParam)
	etcd := opts.Kubespray.EtcdChange
	if etcd != nil {
		// A change of masters starts only from the etcd the record describes.
		if err := d.addTemplate(checketcdmembers.Template(opts.StepImage, p.Spec.SSH.LoginUser())); err != nil {
			return nil, err
		}
		d.addTask(wfv1.DAGTask{Name: checketcdmembers.BeforeTask, Template: checketcdmembers.Name, Arguments: checketcdmembers.Arguments(resolvedHosts, etcd.Before)}, pinhostkeys.Name)
		kubesprayAfter = append(kubesprayAfter, checketcdmembers.BeforeTask)
	}
	kubesprayDone := runkubespray.Name
	switch opts.Kubespray.Mode {
	case runkubespray.ModeUpgrade:
		if kubesprayDone, err = addUpgradeWaves(d, opts.Kubespray, kubesprayArgs, kubesprayAfter); err != nil {
			return nil, err
		}
	case runkubespray.ModeRenewCertificates:
		kubesprayDone = runkubespray.RenewCertificatesTask
		d.addTask(wfv1.DAGTask{Name: kubesprayDone, Template: runkubespray.Name, Arguments: withLimit(kubesprayArgs, runkubespray.ControlPlaneLimit)}, kubesprayAfter...)
	default:
		d.addTask(wfv1.DAGTask{Name: runkubespray.Name, Template: runkubespray.Name, Arguments: wfv1.Arguments{Parameters: kubesprayArgs}}, kubesprayAfter...)
	}
	if opts.Kubespray.UpdateControlPlane {
		update, err := runkubespray.UpdateControlPlaneTemplate(kubesprayImage, opts.Kubespray.KubernetesVersion)
		if err != nil {
			return nil, fmt.Errorf("options: %w", err)
		}
		if err := d.addTemplate(update); err != nil {
			return nil, err
		}
		d.addTask(wfv1.DAGTask{Name: runkubespray.UpdateControlPlaneName, Template: runkubespray.UpdateControlPlaneName,
			Arguments: withLimit(kubesprayArgs, runkubespray.ControlPlaneLimit)}, kubesprayDone)
		kubesprayDone = runkubespray.UpdateControlPlaneName
	}
	if etcd != nil {
		// ... and ends with the etcd it planned.
		d.addTask(wfv1.DAGTask{Name: checketcdmembers.AfterTask, Template: checketcdmembers.Name,
			Arguments: checketcdmembers.Arguments(resolvedHosts, etcd.After)}, kubesprayDone)
		kubesprayDone = checketcdmembers.AfterTask
	}
	d.addTask(wfv1.DAGTask{Name: fetchkubeconfig.Name, Template: fetchkubeconfig.Name, Arguments: hostsOf(resolveleases.Name)}, kubesprayDone)
	// The certificates' expiry, for the status, once the cluster is as the run left it.
	d.addTask(wfv1.DAGTask{Name: readcertificates.Name, Template: readcertificates.Name, Arguments: hostsOf(resolveleases.Name)}, fetchkubeconfig.Name)
	// Plugins run one after another, in CR order: later ones (sriov-network) may need
	// earlier ones (multus).
	previous := fetchkubeconfig.Name
	for _, plugin := range p.Spec.KUDPlugins {
		name := kudplugin.TaskName(plugin)
		d.addTask(wfv1.DAGTask{
			Name:        name,
			TemplateRef: kudplugin.TemplateRef(plugin),
			Arguments:   kudplugin.Arguments(cluster+bpav1.KubeconfigSecretSuffix, opts.KubectlImage, manifests[plugin]),
		}, previous)
		previous = name
	}
	templates, err := d.build(ProvisionEntrypoint)
	if err != nil {
		return nil, err
	}

	wf := newWorkflow(&p.ObjectMeta, "Provisioning", bpav1.WorkflowKindProvisioning, cluster, WorkflowScopeAll, opts)
	wf.Annotations = map[string]string{
		"workflows.argoproj.io/title":       fmt.Sprintf("Provision cluster %s", cluster),
		"workflows.argoproj.io/description": fmt.Sprintf("Provisioning %s/%s generation %d: %s", p.Namespace, p.Name, Generation(&p.ObjectMeta), describeProvisioning(p, opts, mirror)),
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
	wf.Spec.Volumes = append(wf.Spec.Volumes, sshKeyVolume(sshKeyRef(p.Spec.SSH, cluster, opts)), knownHostsVolume(cluster), reportnodes.Volume(cluster))
	if opts.LeaseFile != "" {
		wf.Spec.Volumes = append(wf.Spec.Volumes, corev1.Volume{Name: steps.LeasesVolume, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: opts.LeaseFile, Type: ptr.To(corev1.HostPathFile)},
		}})
	}
	return wf, nil
}

// addUpgradeWaves adds an upgrade's tasks to d, one after another: the control plane's, then
// each wave of workers, each after its approval when the plan asks for them. Each runs the
// run-kubespray template with its own limit; a failed wave stops the ones after it, and
// Argo's retry starts again from it. It returns the last task.
func addUpgradeWaves(d *dag, plan runkubespray.Plan, kubesprayArgs []wfv1.Parameter, after []string) (string, error) {
	d.addTask(wfv1.DAGTask{Name: runkubespray.ControlPlaneTask, Template: runkubespray.Name, Arguments: withLimit(kubesprayArgs, runkubespray.ControlPlaneLimit)}, after...)
	previous := runkubespray.ControlPlaneTask
	if plan.Approval && len(plan.Waves) > 0 {
		if err := d.addTemplate(runkubespray.ApprovalTemplate()); err != nil {
			return "", err
		}
	}
	for i, wave := range plan.Waves {
		if plan.Approval {
			d.addTask(wfv1.DAGTask{Name: runkubespray.ApprovalTask(i + 1), Template: runkubespray.ApprovalTemplateName}, previous)
			previous = runkubespray.ApprovalTask(i + 1)
		}
		d.addTask(wfv1.DAGTask{Name: runkubespray.WaveTask(i + 1), Template: runkubespray.Name, Arguments: withLimit(kubesprayArgs, strings.Join(wave, ","))}, previous)
		previous = runkubespray.WaveTask(i + 1)
	}
	return previous, nil
}

// withLimit are a kubespray task's arguments with the --limit of its upgrade-cluster.yml.
func withLimit(kubesprayArgs []wfv1.Parameter, limit string) wfv1.Arguments {
	return wfv1.Arguments{Parameters: append(slices.Clone(kubesprayArgs), wfv1.Parameter{Name: runkubespray.LimitParam, Value: wfv1.AnyStringPtr(limit)})}
}

// KubesprayImageOf is the kubespray image p's runs use: its own, or the site's.
func KubesprayImageOf(p *bpav1.Provisioning, opts Options) string {
	if p.Spec.Kubespray != nil && p.Spec.Kubespray.Image != "" {
		return p.Spec.Kubespray.Image
	}
	return opts.KubesprayImage
}

// Software compiles a Software into resolve-cluster-hosts → install-software, one task per
// node through withParam, so the Workflow's size does not depend on the number of nodes.
func Software(in *bpav1.Software, opts Options) (*wfv1.Workflow, error) {
	s := in.DeepCopy()
	if errs := s.Validate(); len(errs) > 0 {
		return nil, &bpav1.InvalidError{Kind: "Software", Namespace: s.Namespace, Name: s.Name, Errs: errs}
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cluster := s.Labels[bpav1.ClusterLabel]
	var registry *installsoftware.SiteRegistry
	if len(s.Spec.MasterBinaries)+len(s.Spec.WorkerBinaries) > 0 {
		if opts.SiteRegistry == "" || opts.SiteRegistrySecret == "" {
			path := field.NewPath("spec", "workerBinaries")
			if len(s.Spec.MasterBinaries) > 0 {
				path = field.NewPath("spec", "masterBinaries")
			}
			return nil, &bpav1.InvalidError{Kind: "Software", Namespace: s.Namespace, Name: s.Name, Errs: field.ErrorList{
				field.Forbidden(path, "binaries come from the site registry, and this controller has none (--site-registry)"),
			}}
		}
		registry = &installsoftware.SiteRegistry{Address: opts.SiteRegistry, Secret: opts.SiteRegistrySecret, Digests: opts.BinaryDigests}
	}
	d := newDAG()
	for _, t := range []wfv1.Template{
		resolveclusterhosts.Template(opts.StepImage, sortedCopy(opts.SoftwareNodes)),
		installsoftware.Template(opts.StepImage, registry),
	} {
		if err := d.addTemplate(t); err != nil {
			return nil, err
		}
	}
	d.addTask(wfv1.DAGTask{Name: resolveclusterhosts.Name, Template: resolveclusterhosts.Name})
	d.addTask(installsoftware.FanOut("{{tasks."+resolveclusterhosts.Name+".outputs.parameters."+steps.NodesParam+"}}"), resolveclusterhosts.Name)
	templates, err := d.build(SoftwareEntrypoint)
	if err != nil {
		return nil, err
	}
	wf := newWorkflow(&s.ObjectMeta, "Software", bpav1.WorkflowKindSoftware, cluster, Scope(opts.SoftwareNodes), opts)
	wf.Labels[bpav1.WorkflowScopeLabel] = Scope(opts.SoftwareNodes)
	scope := "every node"
	if len(opts.SoftwareNodes) > 0 {
		scope = "nodes " + strings.Join(sortedCopy(opts.SoftwareNodes), ", ")
	}
	wf.Annotations = map[string]string{
		"workflows.argoproj.io/title":       fmt.Sprintf("Install software on cluster %s", cluster),
		"workflows.argoproj.io/description": softwareDescription(s, scope),
	}
	wf.Spec.Entrypoint = SoftwareEntrypoint
	wf.Spec.Templates = templates
	wf.Spec.ActiveDeadlineSeconds = ptr.To(opts.SoftwareDeadlineSeconds)
	wf.Spec.Volumes = append(wf.Spec.Volumes, sshKeyVolume(sshKeyRef(s.Spec.SSH, cluster, opts)))
	if registry != nil {
		wf.Spec.Volumes = append(wf.Spec.Volumes, installsoftware.SiteRegistryVolume(registry.Secret))
	}
	return wf, nil
}

// softwareDescription is the Workflow's description in Argo's UI: what it installs, where.
func softwareDescription(s *bpav1.Software, scope string) string {
	d := fmt.Sprintf("Software %s/%s generation %d: %d master and %d worker packages", s.Namespace, s.Name, Generation(&s.ObjectMeta), len(s.Spec.MasterSoftware), len(s.Spec.WorkerSoftware))
	if n := len(s.Spec.MasterBinaries) + len(s.Spec.WorkerBinaries); n > 0 {
		d += fmt.Sprintf(", %d master and %d worker binaries", len(s.Spec.MasterBinaries), len(s.Spec.WorkerBinaries))
	}
	return d + " on " + scope
}

// leaving are the nodes a remove run takes out of the cluster.
func leaving(plan runkubespray.Plan) []string {
	if plan.Mode != runkubespray.ModeRemove {
		return nil
	}
	return sortedCopy(plan.Nodes)
}

// newWorkflow is the part both kinds share: name, labels, owner, parameters naming the CR,
// the per-cluster mutex, pod security and scratch space.
// podGC is Argo's podGC for the retention; nil leaves the pods to go with the Workflow.
func podGC(r Retention) *wfv1.PodGC {
	if r.PodGC == "" {
		return nil
	}
	return &wfv1.PodGC{Strategy: r.PodGC}
}

// ttl is Argo's ttlStrategy for the retention; nil keeps finished Workflows.
func ttl(r Retention) *wfv1.TTLStrategy {
	if r.SuccessSeconds == 0 && r.FailureSeconds == 0 {
		return nil
	}
	t := &wfv1.TTLStrategy{}
	if r.SuccessSeconds > 0 {
		t.SecondsAfterSuccess = ptr.To(r.SuccessSeconds)
	}
	if r.FailureSeconds > 0 {
		t.SecondsAfterFailure = ptr.To(r.FailureSeconds)
	}
	return t
}

func newWorkflow(meta *metav1.ObjectMeta, kind, kindLabel, cluster, scope string, opts Options) *wfv1.Workflow {
	generation := Generation(meta)
	run := opts.Run
	if run == "" {
		run = RunID(meta, scope)
	}
	wf := &wfv1.Workflow{
		TypeMeta: metav1.TypeMeta{APIVersion: wfv1.SchemeGroupVersion.String(), Kind: "Workflow"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      WorkflowName(kindLabel, meta.Name, generation, run),
			Namespace: meta.Namespace,
			Labels: map[string]string{
				bpav1.WorkflowClusterLabel:    cluster,
				bpav1.WorkflowKindLabel:       kindLabel,
				bpav1.WorkflowNameLabel:       LabelValue(meta.Name),
				bpav1.WorkflowGenerationLabel: strconv.FormatInt(generation, 10),
				bpav1.WorkflowRunLabel:        run,
			},
		},
	}
	if meta.UID != "" {
		wf.OwnerReferences = []metav1.OwnerReference{{
			APIVersion:         bpav1.GroupVersion.String(),
			Kind:               kind,
			Name:               meta.Name,
			UID:                meta.UID,
			Controller:         ptr.To(true),
			BlockOwnerDeletion: ptr.To(true),
		}}
	}
	wf.Spec = wfv1.WorkflowSpec{
		ServiceAccountName: steps.StepServiceAccount(cluster),
		Arguments: wfv1.Arguments{Parameters: []wfv1.Parameter{
			{Name: steps.ParamNamespace, Value: wfv1.AnyStringPtr(meta.Namespace)},
			{Name: steps.ParamName, Value: wfv1.AnyStringPtr(meta.Name)},
			{Name: steps.ParamUID, Value: wfv1.AnyStringPtr(string(meta.UID))},
			{Name: steps.ParamGeneration, Value: wfv1.AnyStringPtr(strconv.FormatInt(generation, 10))},
			{Name: steps.ParamCluster, Value: wfv1.AnyStringPtr(cluster)},
		}},
		// One cluster, one running Workflow: provisioning and software of a cluster queue.
		Synchronization: &wfv1.Synchronization{Mutexes: []*wfv1.Mutex{{Name: "bpa-cluster-" + cluster}}},
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To(steps.StepUser),
			RunAsGroup:     ptr.To(steps.StepUser),
			FSGroup:        ptr.To(steps.StepUser),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Volumes:     []corev1.Volume{{Name: steps.TmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		PodGC:       podGC(opts.Retention),
		TTLStrategy: ttl(opts.Retention),
	}
	return wf
}

// Generation is the CR's generation; a CR read from a file and not yet stored counts as the
// first generation, as the API server will number it.
func Generation(meta *metav1.ObjectMeta) int64 {
	return max(meta.Generation, 1)
}

// WorkflowName is deterministic: one name per run (see RunID), so "create if absent" is
// idempotent, and a new run (a new CR incarnation, generation, node set or rerun request) never
// meets an old Workflow under its name. Long CR names are cut and made unique again with a hash.
func WorkflowName(kindLabel, crName string, generation int64, run string) string {
	prefix := "prov-"
	if kindLabel == bpav1.WorkflowKindSoftware {
		prefix = "sw-"
	}
	suffix := "-" + strconv.FormatInt(generation, 10) + "-" + run[:min(len(run), runNameLength)]
	name := prefix + crName + suffix
	if len(name) <= MaxWorkflowNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(crName))
	hash := hex.EncodeToString(sum[:])[:8]
	keep := MaxWorkflowNameLength - len(prefix) - len(suffix) - len(hash) - 1
	cut := strings.TrimRight(crName[:keep], "-.")
	return prefix + cut + "-" + hash + suffix
}

// RunID names one run: the CR's incarnation (uid) and generation, the nodes it runs on (scope)
// and whatever else makes a run new (salt: a rerun request, the cluster generation a Software
// run installs on). It is the Workflow's run label; its first characters end the name.
func RunID(meta *metav1.ObjectMeta, scope string, salt ...string) string {
	h := sha256.New()
	h.Write([]byte(string(meta.UID) + "\x00" + strconv.FormatInt(Generation(meta), 10) + "\x00" + scope))
	for _, s := range salt {
		if s != "" { // no salt and an empty one are the same run
			h.Write([]byte("\x00" + s))
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:runIDLength]
}

// runIDLength is the length of a run id (a label value); runNameLength how much of it a
// Workflow name carries.
const (
	runIDLength   = 16
	runNameLength = 5
)

// WorkflowScopeAll is the scope of a run over every node.
const WorkflowScopeAll = bpav1.WorkflowScopeAll

// Scope names the nodes a Software run installs on: "all" for every node, else a digest of the
// sorted node list (a label value), so that each day-2 run has its own name and label.
func Scope(nodes []string) string {
	if len(nodes) == 0 {
		return WorkflowScopeAll
	}
	sum := sha256.Sum256([]byte(strings.Join(sortedCopy(nodes), ",")))
	return hex.EncodeToString(sum[:])[:16]
}

// LabelValue fits a CR name (up to 253 characters) into a label value (up to 63).
func LabelValue(name string) string {
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:54], "-.") + "-" + hex.EncodeToString(sum[:])[:8]
}

func outputOf(task, output, as string) wfv1.Parameter {
	return wfv1.Parameter{Name: as, Value: wfv1.AnyStringPtr("{{tasks." + task + ".outputs.parameters." + output + "}}")}
}

// sshKeyRef is the CR's SSH key Secret; a CR naming none gets the site's (opts.SSHKeySecret),
// or else "<cluster>-ssh-key".
func sshKeyRef(a *bpav1.SSHAccess, cluster string, opts Options) bpav1.SecretKeyReference {
	ref := a.SSHKeyRef(cluster)
	if opts.SSHKeySecret != "" && (a == nil || a.SecretRef == nil) {
		ref.Name = opts.SSHKeySecret
	}
	return ref
}

func sshKeyVolume(ref bpav1.SecretKeyReference) corev1.Volume {
	return corev1.Volume{Name: steps.SSHKeyVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: ref.Name,
		Items:      []corev1.KeyToPath{{Key: ref.Key, Path: steps.SSHKeyFile}},
		// Owned by root, readable by the step's group (fsGroup) only.
		DefaultMode: ptr.To[int32](0o440),
	}}}
}

// knownHostsVolume is the cluster's pinned host keys in OpenSSH's known_hosts format.
func knownHostsVolume(cluster string) corev1.Volume {
	return corev1.Volume{Name: steps.KnownHostsVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName:  cluster + bpav1.KnownHostsSecretSuffix,
		Items:       []corev1.KeyToPath{{Key: steps.KnownHostsKey, Path: steps.KnownHostsKey}},
		DefaultMode: ptr.To[int32](0o444),
	}}}
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
