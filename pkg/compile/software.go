package compile

import (
	"fmt"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveclusterhosts"
)

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
