package v1alpha1

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// HostEntry is one item of masters or workers: a one-key map from the node's label (its
// Kubernetes node name and inventory host name) to what the host must be.
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:MaxProperties=1
// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 63 && k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",message="a host label must be a DNS-1123 label: lower-case letters, digits and '-', at most 63 characters, starting and ending with a letter or digit"
// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['all', 'bastion', 'etcd', 'localhost', 'ungrouped']))",message="a host label may not be one of Ansible's or the inventory's reserved names all, bastion, etcd, localhost, ungrouped"
type HostEntry map[string]HostRequirements

// HostRequirements says which BareMetalHost may take an entry: by MAC address, by resources,
// or both (then the host with that MAC must also meet the resources).
// +kubebuilder:validation:XValidation:rule="has(self.mac__dash__address) || has(self.cpu) || has(self.memory) || (has(self.sriov) && self.sriov) || (has(self.qat) && self.qat)",message="an entry needs a mac-address, cpu, memory, sriov or qat to choose its host by"
type HostRequirements struct {
	// mac-address of one of the host's NICs (any NIC, case-insensitive).
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$`
	MACAddress string `json:"mac-address,omitempty"`

	// cpu is the least number of CPUs (status.hardware.cpu.count) the host must have.
	// +optional
	// +kubebuilder:validation:Minimum=1
	CPU *int32 `json:"cpu,omitempty"`

	// memory is the least RAM (status.hardware.ramMebibytes) the host must have, e.g. 8Gi.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`

	// sriov asks for a host labelled feature.bpa.akraino.org/sriov=true.
	// +optional
	SRIOV bool `json:"sriov,omitempty"`

	// qat asks for a host labelled feature.bpa.akraino.org/qat=true.
	// +optional
	QAT bool `json:"qat,omitempty"`
}

// HostSelector says where discover-hosts looks for BareMetalHosts.
type HostSelector struct {
	// namespaces to list BareMetalHosts in. Empty: the Provisioning's own. A namespace other
	// than its own must be one the site administrator allows (the controller's
	// --host-namespaces): the steps' identity is granted BareMetalHosts there.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`

	// labelSelector restricts the BareMetalHosts considered.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// KubesprayOptions tunes the run-kubespray step.
type KubesprayOptions struct {
	// image of kubespray to run, pinned by tag or digest. Defaults to the controller's default.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][a-zA-Z0-9._/-]*(:[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127})?(@sha256:[a-f0-9]{64})?$`
	Image string `json:"image,omitempty"`

	// extraVars are passed to ansible-playbook as extra variables from a JSON file, never
	// through a shell. Names are Ansible identifiers and may not start with ansible_ (those
	// steer the connection). Values are any JSON: strings, numbers, booleans, lists and maps, as
	// kubespray's variables are typed (kube_proxy_strict_arp: true, dns_min_replicas: 1,
	// containerd_registries_mirrors: a list of maps); no string in them, key or value, at any
	// depth, may hold Jinja2 delimiters ({{, {%, {#), which Ansible would evaluate, and each value
	// is at most 8 levels deep and 16 KiB of JSON. The controller checks names and values (a
	// schema cannot: CEL cannot declare a map whose values are any JSON): breaking these rules
	// makes the Provisioning Stalled, reason InvalidSpec, naming the variable, before anything runs.
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	ExtraVars map[string]ExtraVarValue `json:"extraVars,omitempty"`
}

// ExtraVarValue is the value of a kubespray extra variable: any JSON (see ExtraVars).
type ExtraVarValue = apiextensionsv1.JSON

// ExtraVar makes an ExtraVarValue of v (a string, number, boolean, list or map), for Go
// callers and tests.
func ExtraVar(v any) ExtraVarValue {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("ExtraVar(%#v): %v", v, err))
	}
	return ExtraVarValue{Raw: raw}
}

// ProvisioningSpec says which BareMetalHosts become the masters and workers of a cluster.
// +kubebuilder:validation:XValidation:rule="size(self.masters) + (has(self.workers) ? size(self.workers) : 0) <= 5000",message="a cluster has at most 5000 hosts"
type ProvisioningSpec struct {
	// masters of the cluster, each a one-key map {label: {mac-address, cpu, memory, sriov, qat}}.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=99
	Masters []HostEntry `json:"masters"`

	// workers of the cluster, in the shape of masters. With no workers, the masters also
	// take the worker role.
	// +optional
	// +kubebuilder:validation:MaxItems=5000
	Workers []HostEntry `json:"workers,omitempty"`

	// KUDPlugins to install once the cluster is up, in this order; each needs a
	// WorkflowTemplate bpa-plugin-<name>.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:items:MaxLength=40
	// +listType=set
	KUDPlugins []string `json:"KUDPlugins,omitempty"`

	// PodSubnet is the pods' CIDR (kubespray's kube_pods_subnet).
	// +optional
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="PodSubnet must be a CIDR such as 10.244.64.0/18"
	PodSubnet string `json:"PodSubnet,omitempty"`

	// ssh says how steps reach the nodes.
	// +optional
	SSH *SSHAccess `json:"ssh,omitempty"`

	// kubespray tunes the run-kubespray step.
	// +optional
	Kubespray *KubesprayOptions `json:"kubespray,omitempty"`

	// hostSelector says where to look for BareMetalHosts.
	// +optional
	HostSelector *HostSelector `json:"hostSelector,omitempty"`

	// offline, for a site without internet access: kubespray downloads its files and images,
	// containerd pulls every image, and the KUD plugins read their manifests from the site's
	// mirror (the site registry, through the controller's --offline-mirror). Unset: the
	// controller's default (--offline).
	// +optional
	Offline *bool `json:"offline,omitempty"`

	// kubernetesVersion the cluster runs, as kubespray names it ("1.34.3", no leading zeros:
	// kubespray looks it up as written). Unset: the default of the kubespray release the first
	// run used, kept for the cluster's life (a later image does not move it). Raised on a
	// running cluster, the next run upgrades it with kubespray's upgrade-cluster.yml: the
	// control plane first, then the workers in waves (spec.upgrade). Going down (below the
	// record, or below any node's kubelet after a failed wave), skipping a minor version, or a
	// version the kubespray image cannot install is refused (Stalled, UnsupportedChange),
	// naming the versions it can go to; docs/day2.md.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})$`
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// upgrade says how a raised kubernetesVersion rolls out to the workers.
	// +optional
	Upgrade *UpgradePolicy `json:"upgrade,omitempty"`

	// certificateRenewal, set to a new value on a running cluster ("2026-11", say), renews the
	// control plane's certificates once: the next run renews every certificate kubeadm manages
	// on each master in turn, as kubespray's own renewal does (kubeadm certs renew all, the
	// control plane restarted), and fetch-kubeconfig then stores the renewed admin kubeconfig.
	// Only the value changing matters; it cannot come with another change. docs/day2.md.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._-]*$`
	CertificateRenewal string `json:"certificateRenewal,omitempty"`
}

// UpgradeApproval says whether an upgrade's waves wait for an operator.
// +kubebuilder:validation:Enum=none;perWave
type UpgradeApproval string

// The upgrade approvals.
const (
	// UpgradeApprovalNone runs the waves one after another.
	UpgradeApprovalNone UpgradeApproval = "none"
	// UpgradeApprovalPerWave stops the Workflow before each wave of workers (an Argo suspend
	// node) until an operator resumes it: argo resume, or Resume in Argo's UI.
	UpgradeApprovalPerWave UpgradeApproval = "perWave"
)

// UpgradePolicy is how an upgrade rolls out.
type UpgradePolicy struct {
	// serial is how many workers one wave upgrades at once: a count ("2", or 2) or a
	// percentage of the workers ("25%"), rounded up, at least one. Default "20%", kubespray's
	// own serial. The control plane always goes first, one master at a time.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9][0-9]{0,3}|[1-9][0-9]?%|100%)$')",message="serial is a count of at least 1 or a percentage from 1% to 100%"
	Serial *intstr.IntOrString `json:"serial,omitempty"`

	// approval: none (default) runs the waves one after another; perWave stops before each
	// wave of workers until it is resumed, and the status says which wave waits on which nodes.
	// +optional
	Approval UpgradeApproval `json:"approval,omitempty"`
}

// Node is one node of a cluster: the Provisioning entry it is, as which roles, on which
// BareMetalHost, at which address. It is the one shape a node has everywhere: the
// Provisioning's status.hosts, the hosts file discover-hosts and resolve-leases hand on, the
// ConfigMap "<cluster>-hosts" fetch-kubeconfig writes, the nodes install-software fans out
// over and the kubespray inventory's hosts.
type Node struct {
	// label of the CR entry.
	Label string `json:"label"`
	// role: master, worker, or master,worker.
	Role NodeRoles `json:"role"`
	// bareMetalHost placed, as namespace/name.
	BareMetalHost string `json:"bareMetalHost"`
	// mac the host is addressed through: the entry's MAC, or the host's boot MAC when it was
	// placed by resources alone. Lower case.
	MAC string `json:"mac"`
	// ip of that MAC, filled in by resolve-leases.
	// +optional
	IP string `json:"ip,omitempty"`
}

// ProvisioningStatus mirrors the Workflow compiled from the Provisioning.
type ProvisioningStatus struct {
	WorkflowStatus `json:",inline"`

	// hosts placed by discover-hosts and addressed by resolve-leases.
	// +optional
	// +listType=map
	// +listMapKey=label
	Hosts []Node `json:"hosts,omitempty"`

	// kubeconfigSecretName is the Secret (key "value") holding the new cluster's kubeconfig.
	// +optional
	KubeconfigSecretName string `json:"kubeconfigSecretName,omitempty"`

	// provisioned records the masters and workers of the last generation whose Workflow
	// succeeded: the cluster as it is. A new generation is compared with it to choose the
	// kubespray mode (create, scale or remove).
	// +optional
	Provisioned *ProvisionedNodes `json:"provisioned,omitempty"`

	// kubelets are the cluster's nodes by the kubelet version they run, as the last Workflow's
	// report-nodes read them through the stored kubeconfig (whether that Workflow succeeded or
	// failed: a half-done upgrade shows here).
	// +optional
	// +listType=map
	// +listMapKey=version
	Kubelets []KubeletVersion `json:"kubelets,omitempty"`

	// kubeletVersions sums kubelets up for kubectl get: "v1.33.7 ×1, v1.34.3 ×2".
	// +optional
	KubeletVersions string `json:"kubeletVersions,omitempty"`

	// upgrade is where the mirrored Workflow's upgrade stands, when it is one.
	// +optional
	Upgrade *UpgradeStatus `json:"upgrade,omitempty"`

	// certificates are when the control plane's certificates expire, as the last Workflow's
	// read-certificates read them on every master (kubeadm certs check-expiration, over SSH).
	// +optional
	Certificates *CertificatesStatus `json:"certificates,omitempty"`

	// notAnswering are the nodes the mirrored Workflow went on without when they did not answer
	// SSH (pin-host-keys): a removal's leaving nodes and other workers, a renewal's workers, a
	// scale run's other workers, an upgrade's workers (each wave waits for its own). A node the
	// run needs that does not answer makes it wait instead (its message).
	// +optional
	// +listType=map
	// +listMapKey=node
	NotAnswering []SilentNode `json:"notAnswering,omitempty"`

	// kubespray is how far the kubespray playbook the mirrored Workflow runs now has gone, as
	// its step last reported it on its log; absent while no run-kubespray step runs. It is
	// read at most every 30 seconds.
	// +optional
	Kubespray *KubesprayProgress `json:"kubespray,omitempty"`

	// startedRun is the last run the controller started, recorded before its Workflow was
	// created: a started run whose Workflow is gone with no recorded end (deleted while the
	// controller was down) is Stalled (WorkflowDeleted), never started again by itself.
	// +optional
	StartedRun *RunStart `json:"startedRun,omitempty"`
}

// KubesprayProgress is where a running kubespray playbook is. Plays are counted, not tasks:
// a playbook's plays are known when it starts, its tasks are not (kubespray includes most of
// them as it goes, and skips most of those).
type KubesprayProgress struct {
	// step is the Workflow's task that runs kubespray: run-kubespray, upgrade-wave-2, ...
	// +kubebuilder:validation:MaxLength=253
	Step string `json:"step"`

	// summary is the rest in one line: "cluster.yml 5/31 plays: etcd : Check if etcd
	// cluster is healthy".
	// +kubebuilder:validation:MaxLength=1024
	Summary string `json:"summary"`

	// playbook is the playbook running: cluster.yml, or facts.yml before a limited run;
	// empty until its first play begins.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Playbook string `json:"playbook,omitempty"`

	// playsDone of plays have ended.
	// +optional
	PlaysDone int32 `json:"playsDone,omitempty"`
	// +optional
	Plays int32 `json:"plays,omitempty"`

	// play and task are the ones running; task is empty between plays.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Play string `json:"play,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Task string `json:"task,omitempty"`

	// tasksStarted counts the playbook's tasks started so far, skipped ones included.
	// +optional
	TasksStarted int32 `json:"tasksStarted,omitempty"`

	// failedHosts and unreachableHosts are the nodes a task failed on, or that could not be
	// reached, so far in this playbook.
	// +optional
	// +listType=set
	FailedHosts []string `json:"failedHosts,omitempty"`
	// +optional
	// +listType=set
	UnreachableHosts []string `json:"unreachableHosts,omitempty"`
}

// SilentNode is a node that did not answer SSH when a run's pin-host-keys tried it.
type SilentNode struct {
	// node is the entry's label.
	Node string `json:"node"`
	// address is where it was tried (IP:port).
	Address string `json:"address"`
	// triedAt is when.
	TriedAt metav1.Time `json:"triedAt"`
}

// KubeletVersion is the nodes that run one kubelet version.
type KubeletVersion struct {
	// version of the kubelet, as the node reports it ("v1.34.3").
	Version string `json:"version"`
	// nodes that run it.
	Nodes []string `json:"nodes"`
	// notReady are those of them that are not Ready.
	// +optional
	NotReady []string `json:"notReady,omitempty"`
	// cordoned are those of them marked unschedulable (spec.unschedulable): a run that drained
	// a node and did not uncordon it leaves it so (kubespray's upgrade with serial 1 has).
	// +optional
	Cordoned []string `json:"cordoned,omitempty"`
}

// CertificatesStatus is when the control plane's certificates expire.
type CertificatesStatus struct {
	// nextExpiry is the soonest expiry among them: renew before it (spec.certificateRenewal).
	// +optional
	NextExpiry *metav1.Time `json:"nextExpiry,omitempty"`
	// nextToExpire names that certificate and its master ("apiserver on master-1").
	// +optional
	NextToExpire string `json:"nextToExpire,omitempty"`
	// masters are each master's certificates, as kubeadm lists them.
	// +optional
	// +listType=map
	// +listMapKey=node
	Masters []MasterCertificates `json:"masters,omitempty"`
}

// MasterCertificates are one master's kubeadm-managed certificates.
type MasterCertificates struct {
	// node is the master's label.
	Node string `json:"node"`
	// certificates with their expiry, soonest first.
	// +optional
	Certificates []CertificateExpiry `json:"certificates,omitempty"`
	// unreadable says why they could not be read (the master did not answer, kubeadm failed).
	// +optional
	Unreadable string `json:"unreadable,omitempty"`
}

// CertificateExpiry is one certificate's expiry.
type CertificateExpiry struct {
	// name as kubeadm names it ("apiserver", "admin.conf", "ca").
	Name string `json:"name"`
	// expires is its notAfter.
	Expires metav1.Time `json:"expires"`
	// authority is true for a certificate authority (ca, front-proxy-ca, etcd-ca): kubeadm does
	// not renew those.
	// +optional
	Authority bool `json:"authority,omitempty"`
}

// UpgradeStatus is where an upgrade's Workflow stands, wave by wave. Its waves are its tasks,
// as Argo's UI shows them: upgrade-control-plane, then upgrade-wave-1, upgrade-wave-2...
type UpgradeStatus struct {
	// kubernetesVersion the upgrade goes to.
	KubernetesVersion string `json:"kubernetesVersion"`
	// waves of workers after the control plane.
	Waves int `json:"waves"`
	// upgraded are the waves done, in order.
	// +optional
	Upgraded []string `json:"upgraded,omitempty"`
	// waiting is the wave that waits for approval (argo resume, or Resume in Argo's UI).
	// +optional
	Waiting string `json:"waiting,omitempty"`
	// running is the wave upgrading now.
	// +optional
	Running string `json:"running,omitempty"`
	// failed is the wave that failed: the ones after it did not start, and argo retry starts
	// again from it.
	// +optional
	Failed string `json:"failed,omitempty"`
	// nodes of the wave waiting, running or failed (the control plane's: its masters and etcd).
	// +optional
	Nodes []string `json:"nodes,omitempty"`
}

// RunStart is a run the controller has started.
type RunStart struct {
	// run is the Workflow's bpa.akraino.org/run label.
	Run string `json:"run"`
	// generation of the CR the run was compiled from.
	Generation int64 `json:"generation"`
	// workflowName is the Workflow created for it.
	WorkflowName string `json:"workflowName"`
}

// ProvisionedNodes is the cluster as the last successful Workflow left it.
type ProvisionedNodes struct {
	// generation of the Provisioning that Workflow ran.
	Generation int64 `json:"generation"`
	// run is that Workflow's bpa.akraino.org/run label.
	// +optional
	Run string `json:"run,omitempty"`
	// digest of that generation's spec without its workers: when it changes (masters, pod
	// subnet, plugins, kubespray options), the next run is kubespray's cluster.yml.
	Digest string `json:"digest"`
	// masters entries of that generation: added ones join the control plane (cluster.yml),
	// removed ones leave it (remove-node.yml), as docs/day2.md says. Empty in a record written
	// before masters were recorded.
	// +optional
	// +listType=map
	// +listMapKey=label
	Masters []ProvisionedEntry `json:"masters,omitempty"`
	// workers entries of that generation: added ones are scaled in, removed ones removed.
	// +optional
	// +listType=map
	// +listMapKey=label
	Workers []ProvisionedEntry `json:"workers,omitempty"`
	// settingsDigest is the digest of that generation's spec without its nodes and version:
	// a generation that removes masters may change nothing else. Empty in a record written
	// before it was recorded.
	// +optional
	SettingsDigest string `json:"settingsDigest,omitempty"`
	// controlPlane is kubespray's kube_control_plane group in its inventory order: the first
	// is the master kubeadm initialised the cluster on, which kubespray cannot remove, and a
	// master added later comes after the others. Empty in a record written before it was
	// recorded: the masters' labels in order, as the inventory then listed them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=99
	ControlPlane []string `json:"controlPlane,omitempty"`
	// etcd is kubespray's etcd group in its inventory order: the masters that are etcd
	// members, always an odd number of them. Empty in a record written before it was
	// recorded: the first masters of controlPlane, an odd number of them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=99
	Etcd []string `json:"etcd,omitempty"`
	// certificateRenewal is the spec.certificateRenewal the cluster's certificates were last
	// renewed for (or the value the cluster was made with).
	// +optional
	CertificateRenewal string `json:"certificateRenewal,omitempty"`
	// kubernetesVersion the cluster runs after that Workflow: spec.kubernetesVersion, or the
	// kubespray release's default when the spec names none. Empty in a record written before
	// versions were recorded, or when the kubespray image is not a release this controller
	// knows.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
}

// ProvisionedEntry is one masters or workers entry, with a digest of its requirements so that
// an entry whose MAC or resources changed counts as changed.
type ProvisionedEntry struct {
	// label of the entry.
	Label string `json:"label"`
	// digest of the entry's requirements.
	Digest string `json:"digest"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=prov,categories=bpa
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels.cluster`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Workflow",type=string,JSONPath=`.status.workflowName`
// +kubebuilder:printcolumn:name="Kubespray",type=string,JSONPath=`.status.kubespray.summary`
// +kubebuilder:printcolumn:name="Kubernetes",type=string,JSONPath=`.status.provisioned.kubernetesVersion`,priority=1
// +kubebuilder:printcolumn:name="Kubelets",type=string,JSONPath=`.status.kubeletVersions`,priority=1
// +kubebuilder:printcolumn:name="Certificates",type=date,JSONPath=`.status.certificates.nextExpiry`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Provisioning turns provisioned BareMetalHosts into the masters and workers of a Kubernetes
// cluster, through an Argo Workflow that runs kubespray.
type Provisioning struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which hosts become which nodes.
	// +required
	Spec ProvisioningSpec `json:"spec"`

	// status mirrors the compiled Workflow.
	// +optional
	Status ProvisioningStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ProvisioningList is a list of Provisionings.
type ProvisioningList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Provisioning `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Provisioning{}, &ProvisioningList{})
}
