package compile

import (
	"fmt"
	"slices"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checketcdmembers"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checkleavingnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checknodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checksitemirror"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/fetchkubeconfig"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/kudplugin"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/readcertificates"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveleases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// provisioningDAG is a Provisioning run's DAG while it is built: the steps every run kind
// shares are in it, and a run kind adds its kubespray tasks after kubesprayAfter.
type provisioningDAG struct {
	*dag
	p    *bpav1.Provisioning
	opts Options
	plan runkubespray.Plan
	// kubesprayArgs are the arguments of every task that runs the run-kubespray template.
	kubesprayArgs []wfv1.Parameter
	// touchHostsAfter are the tasks every step that connects to a node waits for.
	touchHostsAfter []string
	// kubesprayAfter are the tasks kubespray's first task waits for.
	kubesprayAfter []string
	// checkOnNewKubeconfig is the check of the nodes a kubespray task touched that runs once
	// fetch-kubeconfig has stored the kubeconfig the run left, rather than straight after it.
	checkOnNewKubeconfig *nodesCheck
}

// nodesCheck is a check-nodes task: the kubespray task it follows and the nodes it reads,
// every resolved host when nodes is nil, but those pin-host-keys went on without when
// exceptSilent (the run left them out).
type nodesCheck struct {
	after        string
	nodes        []string
	exceptSilent bool
}

// runKind adds what one kind of run does between the pinned host keys and fetch-kubeconfig,
// and returns its last task.
type runKind func(b *provisioningDAG) (string, error)

// runKindOf picks the run kind of a plan.
func runKindOf(plan runkubespray.Plan) runKind {
	switch {
	case plan.Mode == runkubespray.ModeUpgrade:
		return upgradeRun
	case plan.Mode == runkubespray.ModeRenewCertificates:
		return renewalRun
	case plan.EtcdChange != nil:
		return controlPlaneRun
	case plan.Mode == runkubespray.ModeRemove:
		return removeRun
	default:
		return createOrScaleRun
	}
}

// createOrScaleRun runs cluster.yml, or scale.yml limited to the new nodes, then checks the
// nodes it made or added once their kubeconfig is stored: every node after cluster.yml (a
// rerun on a cluster that exists touches them all), the new ones after scale.yml.
func createOrScaleRun(b *provisioningDAG) (string, error) {
	last := b.runKubespray()
	if b.plan.Mode == runkubespray.ModeScale {
		if err := b.addCheckNodesTemplate(); err != nil {
			return "", err
		}
		b.checkOnNewKubeconfig = &nodesCheck{after: last, nodes: b.plan.Nodes}
		return last, nil
	}
	if err := b.addTemplate(checknodes.EveryNodeTemplate(b.opts.StepImage, b.plan.KubernetesVersion)); err != nil {
		return "", err
	}
	b.checkOnNewKubeconfig = &nodesCheck{after: last}
	return last, nil
}

// removeRun asks which leaving nodes answer, then runs remove-node.yml. The nodes it touched
// are gone: reportnodes' status says which nodes remain.
func removeRun(b *provisioningDAG) (string, error) {
	if err := b.checkLeavingNodes(); err != nil {
		return "", err
	}
	return b.runKubespray(), nil
}

// runKubespray adds the run-kubespray task, one kubespray run (the template's script tells
// the playbooks apart), and returns it.
func (b *provisioningDAG) runKubespray() string {
	b.addTask(wfv1.DAGTask{Name: runkubespray.Name, Template: runkubespray.Name, Arguments: wfv1.Arguments{Parameters: b.kubesprayArgs}}, b.kubesprayAfter...)
	return runkubespray.Name
}

// controlPlaneRun adds or removes masters: it starts only from the etcd the record describes,
// rewrites every master's etcd endpoints when members joined, and ends with the etcd it planned.
func controlPlaneRun(b *provisioningDAG) (string, error) {
	if b.plan.Mode == runkubespray.ModeRemove {
		if err := b.checkLeavingNodes(); err != nil {
			return "", err
		}
	}
	if err := b.addTemplate(checketcdmembers.Template(b.opts.StepImage, b.p.Spec.SSH.LoginUser())); err != nil {
		return "", err
	}
	b.addTask(wfv1.DAGTask{Name: checketcdmembers.BeforeTask, Template: checketcdmembers.Name,
		Arguments: checketcdmembers.Arguments(b.resolvedHosts(), b.plan.EtcdChange.Before)}, pinhostkeys.Name)
	b.kubesprayAfter = append(b.kubesprayAfter, checketcdmembers.BeforeTask)
	last := b.runKubespray()
	var err error
	if b.plan.UpdateControlPlane {
		if last, err = b.updateControlPlane(last); err != nil {
			return "", err
		}
	}
	if last, err = b.checkNodes(last, b.masters()); err != nil {
		return "", err
	}
	b.addTask(wfv1.DAGTask{Name: checketcdmembers.AfterTask, Template: checketcdmembers.Name,
		Arguments: checketcdmembers.Arguments(b.resolvedHosts(), b.plan.EtcdChange.After)}, last)
	return checketcdmembers.AfterTask, nil
}

// renewalRun renews the control plane's certificates, a master at a time, but on the masters
// pin-host-keys went on without. Its masters are checked once fetch-kubeconfig has stored the
// renewed admin kubeconfig (the one stored before may be what expired), the silent ones left
// out.
func renewalRun(b *provisioningDAG) (string, error) {
	args := withLimit(append(slices.Clone(b.kubesprayArgs), silentNodes(runkubespray.SilentNodesParam)), runkubespray.ControlPlaneLimit)
	b.addTask(wfv1.DAGTask{Name: runkubespray.RenewCertificatesTask, Template: runkubespray.Name, Arguments: args}, b.kubesprayAfter...)
	if err := b.addTemplate(checknodes.AnsweringTemplate(b.opts.StepImage, b.plan.KubernetesVersion)); err != nil {
		return "", err
	}
	b.checkOnNewKubeconfig = &nodesCheck{after: runkubespray.RenewCertificatesTask, nodes: b.masters(), exceptSilent: true}
	return runkubespray.RenewCertificatesTask, nil
}

// silentNodes passes pin-host-keys' silent nodes on as the input as.
func silentNodes(as string) wfv1.Parameter {
	return outputOf(pinhostkeys.Name, pinhostkeys.SilentParam, as)
}

// upgradeRun upgrades the control plane, then each wave of workers, each after its approval
// when the plan asks for them. Each runs the run-kubespray template with its own limit, then
// checks its nodes; a failed wave or check stops the waves after it, and Argo's retry starts
// again from it.
func upgradeRun(b *provisioningDAG) (string, error) {
	b.addTask(wfv1.DAGTask{Name: runkubespray.ControlPlaneTask, Template: runkubespray.Name,
		Arguments: withLimit(b.kubesprayArgs, runkubespray.ControlPlaneLimit)}, b.kubesprayAfter...)
	previous, err := b.checkNodes(runkubespray.ControlPlaneTask, b.masters())
	if err != nil {
		return "", err
	}
	if b.plan.Approval && len(b.plan.Waves) > 0 {
		if err := b.addTemplate(runkubespray.ApprovalTemplate()); err != nil {
			return "", err
		}
	}
	for i, wave := range b.plan.Waves {
		if b.plan.Approval {
			b.addTask(wfv1.DAGTask{Name: runkubespray.ApprovalTask(i + 1), Template: runkubespray.ApprovalTemplateName}, previous)
			previous = runkubespray.ApprovalTask(i + 1)
		}
		b.addTask(wfv1.DAGTask{Name: runkubespray.WaveTask(i + 1), Template: runkubespray.Name,
			Arguments: withLimit(b.kubesprayArgs, strings.Join(wave, ","))}, previous)
		if previous, err = b.checkNodes(runkubespray.WaveTask(i+1), wave); err != nil {
			return "", err
		}
	}
	return previous, nil
}

// newProvisioningDAG holds every step template a Provisioning run may use and the tasks every
// run kind shares up to the pinned host keys: discover-hosts → resolve-leases →
// render-inventory, offline the site mirror's check, and pin-host-keys.
func newProvisioningDAG(p *bpav1.Provisioning, opts Options, a admitted, kubespray wfv1.Template) (*provisioningDAG, error) {
	b := &provisioningDAG{dag: newDAG(), p: p, opts: opts, plan: opts.Kubespray}
	gone := leaving(opts.Kubespray)
	for _, t := range []wfv1.Template{
		discoverhosts.Template(opts.StepImage, gone),
		resolveleases.Template(opts.StepImage, leaseFormat(opts), opts.LeaseNodeSelector),
		renderinventory.Template(opts.StepImage, a.mirror, opts.Kubespray.KubernetesVersion, renderinventory.Groups{ControlPlane: opts.Kubespray.ControlPlane, Etcd: opts.Kubespray.Etcd}),
		pinhostkeys.Template(opts.StepImage, mayNotAnswer(opts.Kubespray, &p.Spec)),
		kubespray,
		fetchkubeconfig.Template(opts.StepImage, p.Spec.FirstMaster(), p.Spec.SSH.LoginUser(), gone),
		readcertificates.Template(opts.StepImage, p.Spec.SSH.LoginUser(), gone),
		reportnodes.Template(opts.StepImage),
	} {
		if err := b.addTemplate(t); err != nil {
			return nil, err
		}
	}
	b.addTask(wfv1.DAGTask{Name: discoverhosts.Name, Template: discoverhosts.Name})
	b.addTask(wfv1.DAGTask{Name: resolveleases.Name, Template: resolveleases.Name, Arguments: hostsOf(discoverhosts.Name)}, discoverhosts.Name)
	b.addTask(wfv1.DAGTask{Name: renderinventory.Name, Template: renderinventory.Name, Arguments: hostsOf(resolveleases.Name)}, resolveleases.Name)
	b.kubesprayArgs = []wfv1.Parameter{
		outputOf(renderinventory.Name, steps.InventoryParam, steps.InventoryParam),
		outputOf(renderinventory.Name, steps.ExtraVarsParam, steps.ExtraVarsParam),
	}
	b.touchHostsAfter = []string{resolveleases.Name}
	if a.mirror != nil {
		if err := b.checkSiteMirror(a); err != nil {
			return nil, err
		}
	}
	// Every node's host key is pinned before kubespray connects to any, so that its SSH
	// sessions verify them strictly.
	b.addTask(wfv1.DAGTask{Name: pinhostkeys.Name, Template: pinhostkeys.Name, Arguments: hostsOf(resolveleases.Name)}, b.touchHostsAfter...)
	b.kubesprayAfter = []string{renderinventory.Name, pinhostkeys.Name}
	return b, nil
}

// checkSiteMirror asks, offline, whether the site's mirror holds everything kubespray will
// fetch, before any host is touched (nothing connects to a node until the check passes).
func (b *provisioningDAG) checkSiteMirror(a admitted) error {
	for _, t := range []wfv1.Template{checksitemirror.ListTemplate(a.kubesprayImage), checksitemirror.Template(b.opts.StepImage, a.mirror.URL)} {
		if err := b.addTemplate(t); err != nil {
			return err
		}
	}
	b.addTask(wfv1.DAGTask{Name: checksitemirror.ListName, Template: checksitemirror.ListName, Arguments: wfv1.Arguments{Parameters: b.kubesprayArgs}}, renderinventory.Name)
	b.addTask(wfv1.DAGTask{Name: checksitemirror.Name, Template: checksitemirror.Name, Arguments: wfv1.Arguments{Parameters: []wfv1.Parameter{
		outputOf(checksitemirror.ListName, checksitemirror.DownloadsParam, checksitemirror.DownloadsParam),
	}}}, checksitemirror.ListName)
	b.touchHostsAfter = append(b.touchHostsAfter, checksitemirror.Name)
	return nil
}

// checkLeavingNodes asks which leaving nodes answer, beside the pinning (which waits for no
// leaving node whose key it has): one that does not is removed without a reset.
func (b *provisioningDAG) checkLeavingNodes() error {
	if err := b.addTemplate(checkleavingnodes.Template(b.opts.StepImage, leaving(b.plan))); err != nil {
		return err
	}
	b.addTask(wfv1.DAGTask{Name: checkleavingnodes.Name, Template: checkleavingnodes.Name, Arguments: hostsOf(resolveleases.Name)}, b.touchHostsAfter...)
	b.kubesprayArgs = append(b.kubesprayArgs, outputOf(checkleavingnodes.Name, runkubespray.RemovalVarsParam, runkubespray.RemovalVarsParam))
	b.kubesprayAfter = append(b.kubesprayAfter, checkleavingnodes.Name)
	return nil
}

// checkNodes follows a kubespray task with the check that the nodes it touched are Ready,
// schedulable and at the run's version, and returns the check's task.
func (b *provisioningDAG) checkNodes(task string, nodes []string) (string, error) {
	if err := b.addCheckNodesTemplate(); err != nil {
		return "", err
	}
	b.addTask(wfv1.DAGTask{Name: checknodes.Task(task), Template: checknodes.Name, Arguments: checknodes.Arguments(nodes)}, task)
	return checknodes.Task(task), nil
}

func (b *provisioningDAG) addCheckNodesTemplate() error {
	if b.names[checknodes.Name] {
		return nil
	}
	return b.addTemplate(checknodes.Template(b.opts.StepImage, b.plan.KubernetesVersion))
}

// masters are the masters' node names, first master first.
func (b *provisioningDAG) masters() []string {
	var names []string
	for _, entry := range b.p.Spec.Masters {
		for label := range entry {
			names = append(names, label)
		}
	}
	return names
}

// updateControlPlane follows the task after with upgrade-cluster.yml on the control plane and
// etcd at the cluster's version, and returns its task.
func (b *provisioningDAG) updateControlPlane(after string) (string, error) {
	update, err := runkubespray.UpdateControlPlaneTemplate(KubesprayImageOf(b.p, b.opts), b.plan.KubernetesVersion)
	if err != nil {
		return "", fmt.Errorf("options: %w", err)
	}
	if err := b.addTemplate(update); err != nil {
		return "", err
	}
	b.addTask(wfv1.DAGTask{Name: runkubespray.UpdateControlPlaneName, Template: runkubespray.UpdateControlPlaneName,
		Arguments: withLimit(b.kubesprayArgs, runkubespray.ControlPlaneLimit)}, after)
	return runkubespray.UpdateControlPlaneName, nil
}

// addClusterSteps adds what follows every run's kubespray part: the kubeconfig, the
// certificates' expiry once the cluster is as the run left it, and the KUD plugins.
func (b *provisioningDAG) addClusterSteps(after string, manifests map[string]string) {
	b.addTask(wfv1.DAGTask{Name: fetchkubeconfig.Name, Template: fetchkubeconfig.Name, Arguments: hostsOf(resolveleases.Name)}, after)
	b.addTask(wfv1.DAGTask{Name: readcertificates.Name, Template: readcertificates.Name, Arguments: hostsOf(resolveleases.Name)}, fetchkubeconfig.Name)
	switch check := b.checkOnNewKubeconfig; {
	case check == nil:
	case check.exceptSilent:
		b.addTask(wfv1.DAGTask{Name: checknodes.Task(check.after), Template: checknodes.AnsweringName, Arguments: wfv1.Arguments{Parameters: []wfv1.Parameter{
			{Name: checknodes.NodesParam, Value: wfv1.AnyStringPtr(checknodes.Names(check.nodes))}, silentNodes(checknodes.SilentParam),
		}}}, fetchkubeconfig.Name)
	case check.nodes == nil:
		b.addTask(wfv1.DAGTask{Name: checknodes.Task(check.after), Template: checknodes.EveryNodeName, Arguments: hostsOf(resolveleases.Name)}, fetchkubeconfig.Name)
	default:
		b.addTask(wfv1.DAGTask{Name: checknodes.Task(check.after), Template: checknodes.Name, Arguments: checknodes.Arguments(check.nodes)}, fetchkubeconfig.Name)
	}
	// Plugins run one after another, in CR order: later ones (sriov-network) may need
	// earlier ones (multus).
	cluster := b.p.Labels[bpav1.ClusterLabel]
	previous := fetchkubeconfig.Name
	for _, plugin := range b.p.Spec.KUDPlugins {
		name := kudplugin.TaskName(plugin)
		b.addTask(wfv1.DAGTask{
			Name:        name,
			TemplateRef: kudplugin.TemplateRef(plugin),
			Arguments:   kudplugin.Arguments(cluster+bpav1.KubeconfigSecretSuffix, b.opts.KubectlImage, manifests[plugin]),
		}, previous)
		previous = name
	}
}

// resolvedHosts are the addressed hosts, which every step after resolve-leases reads.
func (b *provisioningDAG) resolvedHosts() wfv1.Parameter {
	return outputOf(resolveleases.Name, steps.HostsParam, steps.HostsParam)
}

// hostsOf passes a task's hosts to the next.
func hostsOf(task string) wfv1.Arguments {
	return wfv1.Arguments{Parameters: []wfv1.Parameter{outputOf(task, steps.HostsParam, steps.HostsParam)}}
}

// withLimit are a kubespray task's arguments with the --limit of its playbook.
func withLimit(kubesprayArgs []wfv1.Parameter, limit string) wfv1.Arguments {
	return wfv1.Arguments{Parameters: append(slices.Clone(kubesprayArgs), wfv1.Parameter{Name: runkubespray.LimitParam, Value: wfv1.AnyStringPtr(limit)})}
}
