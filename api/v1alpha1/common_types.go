package v1alpha1

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels every BPA CR carries, as in the original specification.
const (
	// ClusterLabel names the cluster a CR belongs to. It is required.
	ClusterLabel = "cluster"
	// OwnerLabel names the tenant that owns the cluster. It is informational.
	OwnerLabel = "owner"
)

// Labels the compiler puts on every Workflow; `argo resubmit` copies them, which is how a
// resubmitted Workflow is found again.
const (
	WorkflowClusterLabel    = "bpa.akraino.org/cluster"
	WorkflowKindLabel       = "bpa.akraino.org/kind"
	WorkflowNameLabel       = "bpa.akraino.org/name"
	WorkflowGenerationLabel = "bpa.akraino.org/generation"
)

// Values of WorkflowKindLabel.
const (
	WorkflowKindProvisioning = "provisioning"
	WorkflowKindSoftware     = "software"
)

// Roles a placed host takes in the cluster.
const (
	RoleMaster = "master"
	RoleWorker = "worker"
)

// NodeRoles are the roles of one node as the status, the steps' flags and their reports write
// them: "master", "worker", or "master,worker" for a node with both, masters first.
type NodeRoles string

// RolesOf writes roles as NodeRoles.
func RolesOf(roles ...string) NodeRoles { return NodeRoles(strings.Join(roles, ",")) }

// List is each role, in order.
func (r NodeRoles) List() []string { return strings.Split(string(r), ",") }

// Has reports whether role is among them.
func (r NodeRoles) Has(role string) bool { return slices.Contains(r.List(), role) }

// Validate refuses anything but master, worker, or master,worker.
func (r NodeRoles) Validate() error {
	switch r {
	case RoleMaster, RoleWorker, RoleMaster + "," + RoleWorker:
		return nil
	}
	return fmt.Errorf("role %q: want master, worker or master,worker", string(r))
}

// WorkflowPhase is the phase of the Workflow a CR's status mirrors; the values are Argo's.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Error
type WorkflowPhase string

// The phases of an Argo Workflow.
const (
	PhasePending   WorkflowPhase = "Pending"
	PhaseRunning   WorkflowPhase = "Running"
	PhaseSucceeded WorkflowPhase = "Succeeded"
	PhaseFailed    WorkflowPhase = "Failed"
	PhaseError     WorkflowPhase = "Error"
)

// WorkflowScopeLabel says which nodes a Software Workflow installs on: "all", or a hash of the
// node list when a day-2 run is limited to some nodes. Together with the generation it names one
// run, so the controller never starts the same run twice (argo resubmit copies it).
const WorkflowScopeLabel = "bpa.akraino.org/scope"

// WorkflowScopeAll is the scope of a run over every node.
const WorkflowScopeAll = "all"

// WorkflowRunLabel names one run: a CR incarnation (uid), a generation, the nodes (Software),
// the cluster it ran against (Software) and the rerun request it answers. Workflow names end in
// its first characters, so a deleted and recreated CR, or a node that leaves and rejoins, never
// finds an old Workflow under the new run's name.
const WorkflowRunLabel = "bpa.akraino.org/run"

// RerunAnnotation on a Provisioning or Software asks for its generation to run again: a new
// value (any token, a date say) is a new request. Without it a finished generation never runs
// again by itself, even when Argo deletes its Workflow.
const RerunAnnotation = "bpa.akraino.org/rerun"

// WorkflowRecordAnnotation on a Provisioning Workflow holds what that run leaves the cluster
// as (ProvisionedNodes, and the nodes it removes), written when it is compiled: once it has
// succeeded the controller records it, whatever the CR's spec has become meanwhile.
const WorkflowRecordAnnotation = "bpa.akraino.org/record"

// WorkflowUpgradeAnnotation on an upgrade's Workflow holds the Kubernetes version it upgrades to.
const WorkflowUpgradeAnnotation = "bpa.akraino.org/upgrade-to"

// ResubmittedFromLabel is the label `argo resubmit` puts on the Workflow it creates.
const ResubmittedFromLabel = "workflows.argoproj.io/resubmitted-from-workflow"

// HostsFinalizer keeps a Provisioning until its BareMetalHost claims are released.
const HostsFinalizer = "bpa.akraino.org/release-hosts"

// Condition reasons.
const (
	// ReasonInvalidSpec: the compiler refused the spec; the message names the field.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonWorkflowCreated: the reason of the Event that says a Workflow was created (the
	// conditions then say WorkflowPending, as for any Workflow that has not started yet).
	ReasonWorkflowCreated = "WorkflowCreated"
	// ReasonArgoNotInstalled: the API server serves no Argo Workflow kind; the run starts once
	// Argo Workflows is installed.
	ReasonArgoNotInstalled = "ArgoNotInstalled"
	// ReasonWorkflowPending, ReasonWorkflowRunning, ReasonWorkflowSucceeded, ReasonWorkflowFailed
	// mirror the Workflow's phase (Failed covers Argo's Error).
	ReasonWorkflowPending   = "WorkflowPending"
	ReasonWorkflowRunning   = "WorkflowRunning"
	ReasonWorkflowSucceeded = "WorkflowSucceeded"
	ReasonWorkflowFailed    = "WorkflowFailed"
	// ReasonWaitingForApproval: an upgrade's Workflow waits before a wave of workers until an
	// operator resumes it (argo resume, or Resume in Argo's UI).
	ReasonWaitingForApproval = "WaitingForApproval"
	// ReasonWaitingForWorkflow: another Workflow of this CR is still running; the next one
	// starts when it ends.
	ReasonWaitingForWorkflow = "WaitingForWorkflow"
	// ReasonWaitingForCluster: the Software waits for its cluster's Provisioning to be Ready.
	ReasonWaitingForCluster = "WaitingForCluster"
	// ReasonUpToDate: nothing to run for this generation.
	ReasonUpToDate = "UpToDate"
	// ReasonDay2Unsupported: a change kubespray cannot apply in one run.
	ReasonDay2Unsupported = "UnsupportedChange"
	// ReasonNotFound: a CR the Cluster names does not exist.
	ReasonNotFound = "NotFound"
	// ReasonListFailed, ReasonCreateFailed: an API call failed; the reconcile is retried.
	ReasonListFailed   = "ListFailed"
	ReasonCreateFailed = "CreateFailed"
	// ReasonWorkflowDeleted: the generation's Workflow finished and was deleted (Argo's TTL,
	// archiving, argo delete); its recorded outcome stands, and nothing runs again until the
	// rerun annotation asks.
	ReasonWorkflowDeleted = "WorkflowDeleted"
	// ReasonWorkflowConflict: a Workflow of this run's name exists and belongs to another
	// object (a deleted CR of the same name whose Workflows were orphaned).
	ReasonWorkflowConflict = "WorkflowConflict"
	// ReasonNoNodes: the Software's cluster lists no nodes to install on.
	ReasonNoNodes = "NoNodes"
	// ReasonClusterTaken: another Provisioning of the namespace, created first, holds the cluster
	// this one names; it runs nothing until that one is gone.
	ReasonClusterTaken = "ClusterTaken"
	// ReasonReleaseFailed: a remove run succeeded and its hosts' claims cannot be released yet;
	// retried.
	ReasonReleaseFailed = "ReleaseFailed"
	// ReasonStoppingWorkflows: the CR is being deleted and waits for its unfinished Workflows
	// to stop (Argo's stop) before its BareMetalHosts are released.
	ReasonStoppingWorkflows = "StoppingWorkflows"
	// ReasonIdentityFailed: the step pods' ServiceAccount and Role could not be written.
	ReasonIdentityFailed = "IdentityFailed"
	// ReasonBinariesUnresolved: a Software's binaries cannot be read from the site registry
	// (not uploaded yet, or the registry does not answer); retried while it polls.
	ReasonBinariesUnresolved = "BinariesUnresolved"
	// ReasonWaitingForProvisioning, ReasonWaitingForSoftware: a Cluster waits for one of its CRs.
	ReasonWaitingForProvisioning = "WaitingProvisioning"
	ReasonWaitingForSoftware     = "WaitingSoftware"
	// ReasonClusterReady: a Cluster's Provisioning and Software are both Ready.
	ReasonClusterReady = "Ready"
)

// Event reasons.
const (
	// EventHostReleased: a BareMetalHost claim was handed back after a remove run.
	EventHostReleased = "HostReleased"
	// EventHostsReleased: every claim was handed back on deletion.
	EventHostsReleased = "HostsReleased"
	// EventHostKeyRepinned: pin-host-keys pinned a node's new host key, because its
	// BareMetalHost was provisioned again since, or its address now belongs to another host.
	EventHostKeyRepinned = "HostKeyRepinned"
	// EventNodeNotAnswering: pin-host-keys found a node whose key was pinned before not
	// answering SSH: the run waits for it, within the step's retries, or goes on without it
	// when it can (status.notAnswering).
	EventNodeNotAnswering = "NodeNotAnswering"
	// EventUngracefulRemoval: check-leaving-nodes found a leaving node that does not answer, so
	// the remove run takes the leaving nodes out without draining them for sure or resetting
	// them.
	EventUngracefulRemoval = "UngracefulRemoval"
	// EventRecordFailed: a succeeded Workflow's outcome annotation cannot be read, so the run
	// is not recorded; the next run is planned against the record before it.
	EventRecordFailed = "RecordFailed"
	// EventReleaseFailed: claims could not be released yet (on deletion, or after a remove run);
	// also the reason of the Reconciling condition while a release after a remove run is retried.
	EventReleaseFailed = "ReleaseFailed"
)

// Condition types, following kstatus: Ready, plus Reconciling and Stalled with abnormal-true
// polarity.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// SecretKeyReference names one key of a Secret in the CR's namespace.
type SecretKeyReference struct {
	// name of the Secret, in the CR's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key within the Secret. Defaults to ssh-privatekey, the key of a kubernetes.io/ssh-auth Secret.
	// +optional
	// +kubebuilder:default=ssh-privatekey
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// SSHAccess says how steps reach the cluster's nodes over SSH.
type SSHAccess struct {
	// secretRef names the Secret holding the SSH private key accepted by every node. It is
	// mounted only into the steps that connect to nodes, never copied into parameters or status.
	// Defaults to the Secret "<cluster>-ssh-key", key ssh-privatekey.
	// +optional
	SecretRef *SecretKeyReference `json:"secretRef,omitempty"`

	// user to log in as. Steps use sudo for privileged work when it is not root.
	// +optional
	// +kubebuilder:default=root
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_-]*$`
	User string `json:"user,omitempty"`
}

// WorkflowStatus is what a CR's status mirrors of the Workflow compiled from it.
type WorkflowStatus struct {
	// observedGeneration is the generation whose Workflow this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase of the Workflow: Pending, Running, Succeeded, Failed or Error.
	// +optional
	Phase WorkflowPhase `json:"phase,omitempty"`

	// progress of the Workflow as "done/total" steps.
	// +optional
	Progress string `json:"progress,omitempty"`

	// workflowName is the Workflow being mirrored; after `argo resubmit`, the resubmitted one.
	// +optional
	WorkflowName string `json:"workflowName,omitempty"`

	// workflowURL is that Workflow in Argo's UI, when the controller is told the UI's address
	// (--argo-ui-url, the chart's argoUI.url).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	WorkflowURL string `json:"workflowURL,omitempty"`

	// startedAt is when the Workflow started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// finishedAt is when the Workflow finished.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`

	// message names the failing step and its message.
	// +optional
	Message string `json:"message,omitempty"`

	// lastRun records the outcome of the newest run that finished, so that it stands when Argo
	// deletes or archives the Workflow: a finished run is never started again by itself.
	// +optional
	LastRun *RunRecord `json:"lastRun,omitempty"`

	// conditions: Ready, Reconciling and Stalled, each with observedGeneration.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RunRecord is the outcome of one finished run, as its Workflow last showed it.
type RunRecord struct {
	// run is the Workflow's bpa.akraino.org/run label.
	Run string `json:"run"`
	// generation of the CR the run was compiled from.
	Generation int64 `json:"generation"`
	// workflowName is the Workflow that finished (after argo resubmit, the resubmitted one).
	WorkflowName string `json:"workflowName"`
	// phase it finished in: Succeeded, Failed or Error.
	Phase WorkflowPhase `json:"phase"`
	// message names the failing step and its message.
	// +optional
	Message string `json:"message,omitempty"`
	// finishedAt is when it finished.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}
