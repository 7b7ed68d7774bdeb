package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SoftwarePackage is a package to install: in YAML either its name ("curl") or a one-key map
// from its name to a pinned version ({jq: {version: 1.5+dfsg-1}}).
//
// The CRD validates the name form with a pattern and the map form's shape and version; a
// schema cannot constrain the keys of a value that may also be a string, so the map form's key
// (the name) is validated by the admission policy in config/policy, the compiler and the steps.
// +kubebuilder:validation:Schemaless
// +kubebuilder:pruning:PreserveUnknownFields
type SoftwarePackage struct {
	// Name of the package, as the package manager knows it.
	Name string `json:"-"`
	// Version pinned; empty means any version, as long as it is installed.
	Version string `json:"-"`
}

// SoftwareSpec lists the packages for a cluster's masters and workers.
type SoftwareSpec struct {
	// masterSoftware to install on every master: a package name, or {name: {version: v}}.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	MasterSoftware []SoftwarePackage `json:"masterSoftware,omitempty"`

	// workerSoftware to install on every worker, in the shape of masterSoftware.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	WorkerSoftware []SoftwarePackage `json:"workerSoftware,omitempty"`

	// masterBinaries to install on every master: binaries uploaded to the site registry
	// (`bpa-workflow-controller upload binary NAME:VERSION FILE`).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	MasterBinaries []BinaryPackage `json:"masterBinaries,omitempty"`

	// workerBinaries to install on every worker, in the shape of masterBinaries.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	WorkerBinaries []BinaryPackage `json:"workerBinaries,omitempty"`

	// ssh says how steps reach the nodes. Defaults as in Provisioning.
	// +optional
	SSH *SSHAccess `json:"ssh,omitempty"`
}

// BinaryPackage is a binary from the site registry (its artifact binaries/NAME:VERSION),
// installed on a node as DIRECTORY/NAME, mode 0755, owned by root.
type BinaryPackage struct {
	// name of the binary in the site registry, and of the file on the node.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+([._-][a-z0-9]+)*$`
	Name string `json:"name"`

	// version uploaded (an OCI tag); empty: the highest version uploaded, compared as
	// `sort -V` does.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9._-]*$`
	Version string `json:"version,omitempty"`

	// directory on the node, absolute; its elements start with a letter, digit or _, so none
	// is . or ..; default /usr/local/bin.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^(/[A-Za-z0-9_][A-Za-z0-9._+-]*)+$`
	Directory string `json:"directory,omitempty"`
}

// DefaultBinaryDirectory is where binaries go when a BinaryPackage names no directory.
const DefaultBinaryDirectory = "/usr/local/bin"

// InstallDirectory is the package's directory, defaulted.
func (b BinaryPackage) InstallDirectory() string {
	if b.Directory == "" {
		return DefaultBinaryDirectory
	}
	return b.Directory
}

// NodeBinary is one binary as installed on a node.
type NodeBinary struct {
	// name of the binary.
	Name string `json:"name"`
	// version installed (the one resolved, for a BinaryPackage without a version).
	// +optional
	Version string `json:"version,omitempty"`
	// digest of the installed file (sha256:...), checked on the node.
	// +optional
	Digest string `json:"digest,omitempty"`
	// path of the file on the node.
	// +optional
	Path string `json:"path,omitempty"`
}

// NodeSoftwareReport is what install-software did on one node.
type NodeSoftwareReport struct {
	// node label.
	Node string `json:"node"`
	// role of the node: master, worker, or master,worker.
	// +optional
	Role NodeRoles `json:"role,omitempty"`
	// generation of the Software last installed on this node without failures.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// digest of the package list installed on this node without failures; a node whose
	// role's list has another digest needs a run.
	// +optional
	Digest string `json:"digest,omitempty"`
	// unchanged counts the packages that were already as the CR asks.
	// +optional
	Unchanged int `json:"unchanged,omitempty"`
	// changed lists packages installed or upgraded, as name=version.
	// +optional
	Changed []string `json:"changed,omitempty"`
	// failed lists packages that could not be installed, with the reason.
	// +optional
	Failed []string `json:"failed,omitempty"`
	// binaries lists the binaries installed on this node, with their digests.
	// +optional
	// +listType=map
	// +listMapKey=name
	Binaries []NodeBinary `json:"binaries,omitempty"`
}

// SoftwareStatus mirrors the Workflow compiled from the Software.
type SoftwareStatus struct {
	WorkflowStatus `json:",inline"`

	// merged lists this generation's finished Workflows whose node reports are in nodes, as
	// name@finishedAt: each finish is merged once, so an old Workflow never brings back the
	// report of a node that has left the cluster since.
	// +optional
	// +listType=set
	Merged []string `json:"merged,omitempty"`

	// nodes reports, per node, what the last install changed.
	// +optional
	// +listType=map
	// +listMapKey=node
	Nodes []NodeSoftwareReport `json:"nodes,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sw,categories=bpa
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels.cluster`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Workflow",type=string,JSONPath=`.status.workflowName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Software installs packages, at pinned or any versions, on a cluster's masters and workers.
type Software struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec lists the packages per role.
	// +required
	Spec SoftwareSpec `json:"spec"`

	// status mirrors the compiled Workflow.
	// +optional
	Status SoftwareStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SoftwareList is a list of Software.
type SoftwareList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Software `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Software{}, &SoftwareList{})
}

// The grammar of package names and versions: the union of Debian's and RPM's, starting with a
// letter or digit so that nothing reads as an option to apt or dnf, and a name not ending with
// "-", which apt reads as "remove the package before it". A name ending with "+" (g++, say)
// is a real name: apt looks the whole name up first, and reads a trailing "+" as "install"
// only when no package has that name, so it never removes anything.
const (
	PackageNamePattern      = `^[A-Za-z0-9]([A-Za-z0-9._+-]*[A-Za-z0-9._+])?$`
	PackageNameMaxLength    = 128
	PackageVersionPattern   = `^[A-Za-z0-9]([A-Za-z0-9.+~:_^-]*[A-Za-z0-9.+~:_^])?$`
	PackageVersionMaxLength = 128
)
