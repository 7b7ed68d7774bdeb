// Package runkubespray is the run-kubespray step: ansible-playbook from the kubespray image,
// with the rendered inventory and extra variables as files and the SSH key mounted. Nothing is
// interpolated into a shell line: the command is an argument list. What the step decides is
// here too: which run each generation needs (plan.go, controlplane.go), its scripts and
// playbooks (scripts/, playbooks/).
package runkubespray

import (
	_ "embed"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step, its template and its DAG task.
const Name = "run-kubespray"

// Mode is what kubespray does to the cluster.
type Mode string

// The kubespray modes.
const (
	// ModeCreate runs cluster.yml: a new cluster, or masters changed.
	ModeCreate Mode = "create"
	// ModeScale runs scale.yml limited to new nodes.
	ModeScale Mode = "scale"
	// ModeRemove runs remove-node.yml for nodes leaving.
	ModeRemove Mode = "remove"
	// ModeUpgrade runs upgrade-cluster.yml wave by wave: the control plane and etcd first,
	// then the workers in Waves, as kubespray's node-based upgrade does (docs/operations/upgrades.md).
	ModeUpgrade Mode = "upgrade"
	// ModeRenewCertificates renews the control plane's certificates as kubespray's own renewal
	// does (RenewCertificatesPlaybook), a master at a time.
	ModeRenewCertificates Mode = "renew-certificates"
)

// Plan is the kubespray run a Workflow does.
type Plan struct {
	Mode Mode
	// Nodes are the nodes scale.yml is limited to, or remove-node.yml removes.
	Nodes []string
	// KubernetesVersion the run installs, or upgrades to (kubespray's kube_version, in the
	// extra variables render-inventory writes); empty leaves kubespray's own default (an image
	// of a release the controller does not know).
	KubernetesVersion string
	// Waves are an upgrade's workers, wave by wave, after the control plane.
	Waves [][]string
	// Approval makes each wave of workers wait for an operator (an Argo suspend node).
	Approval bool
	// ControlPlane and Etcd are kubespray's kube_control_plane and etcd groups, in the order
	// render-inventory writes them, on a cluster that exists: the first master stays first (it
	// is the one kubeadm initialised the cluster on), a master added goes last, and etcd keeps
	// the members it has. Empty for a new cluster: render-inventory draws them from the masters.
	ControlPlane, Etcd []string
	// EtcdChange is etcd's membership before and after a run that adds or removes masters,
	// checked on the nodes on either side of kubespray (check-etcd-members); nil otherwise.
	EtcdChange *EtcdChange
	// UpdateControlPlane follows a cluster.yml that added etcd members with upgrade-cluster.yml
	// limited to the control plane and etcd, at the cluster's version: it rewrites every
	// master's etcd endpoints, as kubespray's docs/operations/nodes.md prescribes for "Adding
	// an etcd node".
	UpdateControlPlane bool
	// Joining are the masters a cluster.yml adds to the control plane. A join an earlier
	// attempt left half done on one of them is reset before cluster.yml (ResetFailedJoinsScript).
	Joining []string
}

// EtcdChange is etcd's membership (node labels) before and after a run.
type EtcdChange struct {
	Before, After []string
}

// Command is the container's command and arguments for the plan: ansible-playbook, or a
// constant script (LimitedScript, ClusterScript, RenewCertificatesScript,
// ResetFailedJoinsScript).
func (p Plan) Command() (command, args []string, err error) {
	args = []string{
		"--inventory=" + steps.InputsDir + "/hosts.ini",
		"--private-key=" + steps.SSHKeyPath,
		"--become",
		"--extra-vars=@" + steps.InputsDir + "/extra-vars.json",
		// kubespray writes generated secrets (kubeadm's certificate key) under the inventory's
		// directory by default; the inputs are read-only, /tmp is the pod's scratch space.
		"--extra-vars=credentials_dir=" + CredentialsDir,
	}
	for _, n := range slices.Concat(append([][]string{p.Nodes, p.Joining}, p.Waves...)...) {
		if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
			return nil, nil, fmt.Errorf("kubespray node %q: %s", n, strings.Join(msgs, "; "))
		}
	}
	if len(p.Joining) > 0 && p.Mode != ModeCreate && p.Mode != "" {
		return nil, nil, fmt.Errorf("kubespray mode %q adds no masters", p.Mode)
	}
	nodes := strings.Join(p.Nodes, ",")
	switch p.Mode {
	case ModeCreate, "":
		if len(p.Nodes) > 0 {
			return nil, nil, fmt.Errorf("kubespray mode %q takes no nodes", ModeCreate)
		}
		if len(p.Joining) > 0 {
			return []string{"/bin/sh", "-c", ResetFailedJoinsScript}, append([]string{Name, strings.Join(p.Joining, ",")}, args...), nil
		}
		return []string{"/bin/sh", "-c", ClusterScript}, append([]string{Name}, args...), nil
	case ModeScale:
		if len(p.Nodes) == 0 {
			return nil, nil, fmt.Errorf("kubespray mode %q needs the nodes to add", p.Mode)
		}
		// The script's own name ($0), the limit ($1), the playbook ($2), then
		// ansible-playbook's arguments.
		return []string{"/bin/sh", "-c", LimitedScript}, append([]string{Name, nodes, "scale.yml"}, args...), nil
	case ModeUpgrade:
		if len(p.Nodes) > 0 || p.KubernetesVersion == "" {
			return nil, nil, fmt.Errorf("kubespray mode %q takes no nodes and needs the version to upgrade to", p.Mode)
		}
		// One template for every wave: the limit is the task's parameter ($1 of a constant
		// script, never shell text); a wave's workers go at once (serial), the masters one
		// at a time whatever serial says (kubespray's control-plane play has serial: 1).
		return []string{"/bin/sh", "-c", LimitedScript}, append(withLimitParam(append([]string{"upgrade-cluster.yml"}, args...)), "--extra-vars=serial=100%"), nil
	case ModeRenewCertificates:
		if len(p.Nodes) > 0 {
			return nil, nil, fmt.Errorf("kubespray mode %q takes no nodes", p.Mode)
		}
		return []string{"/bin/sh", "-c", RenewCertificatesScript},
			withLimitParam(append(args, "--extra-vars=bpa_silent_nodes_file="+path.Join(steps.InputsDir, SilentNodesFile))), nil
	case ModeRemove:
		if len(p.Nodes) == 0 {
			return nil, nil, fmt.Errorf("kubespray mode %q needs the nodes to remove", p.Mode)
		}
		// Limited to the leaving nodes, with the others' kept facts: kubespray's facts play of
		// remove-node.yml otherwise connects to every node, and one down stops the removal of
		// another. The removal's variables come last: check-leaving-nodes chose them
		// (RemovalVarsFile).
		return []string{"/bin/sh", "-c", LimitedScript}, append(append([]string{Name, nodes, "remove-node.yml"}, args...),
			"--extra-vars=node="+nodes, "--extra-vars=skip_confirmation=true", "--extra-vars=@"+steps.InputsDir+"/"+RemovalVarsFile), nil
	}
	return nil, nil, fmt.Errorf("unknown kubespray mode %q", p.Mode)
}

// withLimitParam puts before args what a script taking the task's limit parameter reads: its
// own name ($0), then the limit ($1).
func withLimitParam(args []string) []string {
	return append([]string{Name, "{{inputs.parameters." + LimitParam + "}}"}, args...)
}

// The upgrade's waves as DAG tasks: the control plane's, then each wave of workers, each
// perhaps after its approval (ApprovalTemplate).
const (
	// LimitParam is an upgrade wave's input: the --limit of its upgrade-cluster.yml.
	LimitParam = "limit"
	// ControlPlaneLimit is the first wave: the masters and etcd.
	ControlPlaneLimit = "kube_control_plane:etcd"
	// ControlPlaneTask upgrades the control plane.
	ControlPlaneTask = "upgrade-control-plane"
	// ApprovalTemplateName is the suspend template every approval runs.
	ApprovalTemplateName = "approve-wave"
)

// RenewCertificatesTask renews the control plane's certificates (ModeRenewCertificates).
const RenewCertificatesTask = "renew-certificates"

// UpdateControlPlaneName is the template and task that follow a cluster.yml which added etcd
// members: upgrade-cluster.yml at the cluster's version, limited to the control plane and
// etcd (the Plan's UpdateControlPlane).
const UpdateControlPlaneName = "update-control-plane"

// UpdateControlPlaneTemplate is that run: an upgrade's template at the cluster's version,
// under its own name; its task passes ControlPlaneLimit as the limit.
func UpdateControlPlaneTemplate(kubesprayImage, version string) (wfv1.Template, error) {
	t, err := Template(kubesprayImage, Plan{Mode: ModeUpgrade, KubernetesVersion: version})
	t.Name = UpdateControlPlaneName
	return t, err
}

// WaveTask is the task that upgrades the workers of wave i (from 1).
func WaveTask(i int) string { return fmt.Sprintf("upgrade-wave-%d", i) }

// ApprovalTask is the task that waits for wave i's approval.
func ApprovalTask(i int) string { return fmt.Sprintf("approve-wave-%d", i) }

// ApprovalTemplate stops the Workflow until an operator resumes it (argo resume, or Resume in
// Argo's UI): a suspend node with no deadline, since an approval may take days.
func ApprovalTemplate() wfv1.Template {
	return wfv1.Template{Name: ApprovalTemplateName, Suspend: &wfv1.SuspendTemplate{}}
}

// KubesprayUser is the uid and gid the kubespray container runs as: "nobody" and "nogroup",
// which the upstream image's Ubuntu base has in /etc/passwd. OpenSSH's client refuses to run
// as a uid without a passwd entry, so the steps' 65532 (which that image lacks) would fail every
// connection; root is not needed (--become happens on the nodes). The pod's fsGroup still
// lets it read the mounted SSH key and known hosts.
const KubesprayUser int64 = 65534

// RemoteTmp is Ansible's remote temporary directory, expanded by the remote shell (the
// literal $HOME is not Kubernetes' $(VAR) syntax: it reaches Ansible as written).
const RemoteTmp = "$HOME/.ansible/tmp"

// CredentialsDir is where kubespray writes the secrets it generates on the Ansible side.
const CredentialsDir = steps.TmpDir + "/credentials"

// SilentNodesParam is a renewal's input: the nodes pin-host-keys went on without (its output
// of that name, JSON), given to the playbook as the file SilentNodesFile. Their certificates
// are left as they are.
const (
	SilentNodesParam = "silent-nodes"
	SilentNodesFile  = "silent-nodes.json"
)

// RemovalVarsParam is a remove run's input: remove-node.yml's variables as check-leaving-nodes
// chose them (JSON), given to ansible-playbook as the file RemovalVarsFile.
const (
	RemovalVarsParam = "removal-vars"
	RemovalVarsFile  = "removal-vars.json"
)

// Template runs the plan from the kubespray image. Ansible checks every node's host key
// strictly against the known_hosts file pin-host-keys wrote into the cluster's known-hosts
// Secret (mounted read-only), never against what a node presents the first time. The pod calls
// no API: it mounts no ServiceAccount token.
func Template(kubesprayImage string, plan Plan) (wfv1.Template, error) {
	command, args, err := plan.Command()
	if err != nil {
		return wfv1.Template{}, err
	}
	mounts := []corev1.VolumeMount{steps.SSHKeyMount(), steps.KnownHostsMount()}
	if plan.limited() {
		mounts = append(mounts, corev1.VolumeMount{Name: FactsVolume, MountPath: FactsCacheDir, ReadOnly: true})
	}
	c := steps.Container(kubesprayImage, command, args, mounts...)
	// The upstream image's working directory: ansible reads kubespray's ansible.cfg from it.
	c.WorkingDir = "/kubespray"
	c.SecurityContext.RunAsUser = ptr.To(KubesprayUser)
	c.SecurityContext.RunAsGroup = ptr.To(KubesprayUser)
	c.Env = append(c.Env, AnsibleEnv()...)
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "ANSIBLE_HOST_KEY_CHECKING", Value: "True"},
		// Replaces the image's ansible.cfg ssh_args (kubespray's sets UserKnownHostsFile=/dev/null)
		// and keeps its connection sharing and retries, adding keepalives.
		corev1.EnvVar{Name: "ANSIBLE_SSH_ARGS", Value: SSHArgs(steps.KnownHostsPath)},
		// The folder of FailedAttemptsPlugin and ProgressPlugin, then Ansible's own default path.
		corev1.EnvVar{Name: "ANSIBLE_CALLBACK_PLUGINS", Value: CallbackPluginsDir + ":~/.ansible/plugins/callback:/usr/share/ansible/plugins/callback"},
		// kubespray's own fact cache (its ansible.cfg's), in a folder of its own.
		corev1.EnvVar{Name: "ANSIBLE_CACHE_PLUGIN", Value: "jsonfile"},
		corev1.EnvVar{Name: "ANSIBLE_CACHE_PLUGIN_CONNECTION", Value: FactsDir},
	)
	inputs := wfv1.Inputs{
		Parameters: []wfv1.Parameter{{Name: steps.InventoryParam}, {Name: steps.ExtraVarsParam}},
		Artifacts: []wfv1.Artifact{
			steps.InputFile(steps.InventoryParam, "hosts.ini"),
			steps.InputFile(steps.ExtraVarsParam, "extra-vars.json"),
			FailedAttemptsArtifact(),
			ProgressArtifact(),
		},
	}
	if plan.Mode == ModeUpgrade {
		c.Env = append(c.Env, corev1.EnvVar{Name: "BPA_FACTS_WAIT", Value: strconv.Itoa(int(WaveWaitsForSilentNodes.Seconds()))})
	}
	var outputs wfv1.Outputs
	if plan.keepsFacts() {
		inputs.Artifacts = append(inputs.Artifacts, FactsHelperArtifact())
		outputs.Parameters = []wfv1.Parameter{steps.OptionalOutputFile(FactsParam, FactsFile)}
	}
	if plan.Mode == ModeUpgrade || plan.Mode == ModeRenewCertificates {
		inputs.Parameters = append(inputs.Parameters, wfv1.Parameter{Name: LimitParam})
	}
	if plan.Mode == ModeRenewCertificates {
		inputs.Parameters = append(inputs.Parameters, wfv1.Parameter{Name: SilentNodesParam})
		inputs.Artifacts = append(inputs.Artifacts, steps.InputFile(SilentNodesParam, SilentNodesFile))
	}
	if plan.Mode == ModeRemove {
		inputs.Parameters = append(inputs.Parameters, wfv1.Parameter{Name: RemovalVarsParam})
		inputs.Artifacts = append(inputs.Artifacts, steps.InputFile(RemovalVarsParam, RemovalVarsFile))
	}
	t := wfv1.Template{
		Name:          Name,
		Inputs:        inputs,
		Outputs:       outputs,
		Container:     c,
		RetryStrategy: steps.RetryFlakes(),
	}
	steps.NoToken(&t)
	return t, nil
}

// WaveWaitsForSilentNodes is how long an upgrade wave waits for a node of its own that does
// not answer before it fails, naming the node: the workers may be silent when the upgrade
// starts (the waves before theirs go on), and each wave waits only for its own.
const WaveWaitsForSilentNodes = 30 * time.Minute

// limited says whether the run limits its playbook to some nodes (LimitedScript), with the
// kept facts of the others.
func (p Plan) limited() bool {
	return p.Mode == ModeScale || p.Mode == ModeUpgrade || p.Mode == ModeRemove
}

// keepsFacts says whether the run hands the facts it gathered to the controller (FactsParam):
// the runs that gather them, the limited ones and cluster.yml.
func (p Plan) keepsFacts() bool { return p.limited() || p.Mode == ModeCreate || p.Mode == "" }

// AnsibleEnv is how Ansible runs in a pod of the kubespray image as nobody, on a read-only root
// filesystem with only /tmp writable (HOME=/tmp, from steps.Container).
func AnsibleEnv() []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "ANSIBLE_LOCAL_TEMP", Value: steps.TmpDir + "/.ansible/tmp"},
		// Ansible's default, ~/.ansible/tmp, is ~USER of the connection's user: for a task on
		// localhost (kubespray delegates some there) that is nobody, whose passwd home is
		// /nonexistent, and the task fails "Failed to create temporary directory". The
		// remote shell expands $HOME instead: the pod's /tmp there, the SSH user's home on a
		// node, as before.
		{Name: "ANSIBLE_REMOTE_TMP", Value: RemoteTmp},
		{Name: "ANSIBLE_FORCE_COLOR", Value: "False"},
		// The pod's output is a pipe, which Python buffers: Argo's log and UI would show an
		// hour of kubespray in 8 KiB bursts, minutes behind the task that runs.
		{Name: "PYTHONUNBUFFERED", Value: "1"},
	}
}

// FailedAttemptsPlugin is an Ansible callback (bpa_failed_attempts.py) that shows why each failed
// attempt of a retried task failed: Ansible's default output shows only the last attempt's
// error. kubeadm's join, which kubespray tries 4 times, failed half-way at its first attempt on
// the test's machines, and its next attempts failed kubeadm's preflight on the files the first
// had left: the pod's log showed only the preflight's error. The plugin needs no enabling (it
// is not a stdout callback), so kubespray's ansible.cfg stays as it is.
//
//go:embed bpa_failed_attempts.py
var FailedAttemptsPlugin string

// CallbackPluginsDir is where the step's pod finds FailedAttemptsPlugin, as the file
// FailedAttemptsPluginFile (Ansible names a callback by its file).
const (
	CallbackPluginsDir       = steps.InputsDir + "/callback_plugins"
	FailedAttemptsPluginFile = "bpa_failed_attempts.py"
)

// FailedAttemptsArtifact places FailedAttemptsPlugin in CallbackPluginsDir: a constant raw
// artifact, so it works in any kubespray image.
func FailedAttemptsArtifact() wfv1.Artifact {
	return wfv1.Artifact{
		Name:             "failed-attempts-callback",
		Path:             path.Join(CallbackPluginsDir, FailedAttemptsPluginFile),
		ArtifactLocation: wfv1.ArtifactLocation{Raw: &wfv1.RawArtifact{Data: FailedAttemptsPlugin}},
	}
}

// ProgressPlugin is an Ansible callback (bpa_progress.py) that reports how far the playbook
// is: plays done of its plays to Argo's progress file, which the Workflow's progress and
// Argo's UI show, and a "bpa-progress:" line (ProgressLinePrefix) on the step's log, read for
// the CR's status. Like FailedAttemptsPlugin, it needs no enabling.
//
//go:embed bpa_progress.py
var ProgressPlugin string

// ProgressPluginFile is ProgressPlugin's file in CallbackPluginsDir.
const ProgressPluginFile = "bpa_progress.py"

// ProgressArtifact places ProgressPlugin in CallbackPluginsDir.
func ProgressArtifact() wfv1.Artifact {
	return wfv1.Artifact{
		Name:             "progress-callback",
		Path:             path.Join(CallbackPluginsDir, ProgressPluginFile),
		ArtifactLocation: wfv1.ArtifactLocation{Raw: &wfv1.RawArtifact{Data: ProgressPlugin}},
	}
}

// SSHArgs are the ssh options Ansible runs kubespray with: host keys only from knownHosts,
// strictly, and SSHKeepAlive.
func SSHArgs(knownHosts string) string {
	return "-o UserKnownHostsFile=" + knownHosts + " -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes" +
		" -o ControlMaster=auto -o ControlPersist=30m -o ConnectionAttempts=100" + SSHKeepAlive
}

// SSHKeepAlive has ssh ask each node every 30 s whether it is still there and give up after
// 10 unanswered asks. A node that stops answering in the middle of a task (powered off, its
// network restarted without the route back) then fails that task as UNREACHABLE after 5
// minutes; without it, Ansible waits on the open connection for as long as TCP does, which is
// for ever when nothing is in flight (a remove-node.yml on the test site waited 8 minutes for
// a node whose route back was gone). 5 minutes leaves a slow node's sshd time to answer.
const SSHKeepAlive = " -o ServerAliveInterval=30 -o ServerAliveCountMax=10"

// String says what the plan runs, for events and descriptions: "cluster.yml",
// "scale.yml for worker-3".
func (p Plan) String() string {
	switch p.Mode {
	case ModeScale:
		return "scale.yml for " + strings.Join(p.Nodes, ", ")
	case ModeRemove:
		return "remove-node.yml for " + strings.Join(p.Nodes, ", ")
	case ModeRenewCertificates:
		return "the control plane's certificates renewed as kubespray renews them, a master at a time"
	case ModeCreate, "":
		if p.UpdateControlPlane {
			return "cluster.yml, then upgrade-cluster.yml for the control plane and etcd (etcd grows to " + strings.Join(p.Etcd, ", ") + ")"
		}
	case ModeUpgrade:
		approval := ""
		if p.Approval && len(p.Waves) > 0 {
			approval = ", each after its approval (argo resume)"
		}
		return fmt.Sprintf("upgrade-cluster.yml to Kubernetes %s: the control plane, then %d waves of workers%s", p.KubernetesVersion, len(p.Waves), approval)
	}
	return "cluster.yml"
}
