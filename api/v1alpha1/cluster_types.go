package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterSpec ties a cluster's Provisioning and Software together.
type ClusterSpec struct {
	// provisioningCR names the Provisioning, in this namespace, that builds the cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ProvisioningCR string `json:"provisioningCR"`

	// softwareCR names the Software, in this namespace, installed on the cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SoftwareCR string `json:"softwareCR,omitempty"`
}

// ClusterStatus reports one status for the cluster.
type ClusterStatus struct {
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase summarises the two: the Provisioning's until it succeeds, then the Software's.
	// +optional
	Phase WorkflowPhase `json:"phase,omitempty"`

	// provisioningPhase is the Provisioning's phase.
	// +optional
	ProvisioningPhase WorkflowPhase `json:"provisioningPhase,omitempty"`

	// softwarePhase is the Software's phase.
	// +optional
	SoftwarePhase WorkflowPhase `json:"softwarePhase,omitempty"`

	// kubeconfigSecretName is the Secret (key "value") holding the cluster's kubeconfig.
	// +optional
	KubeconfigSecretName string `json:"kubeconfigSecretName,omitempty"`

	// message explains a failure.
	// +optional
	Message string `json:"message,omitempty"`

	// conditions: Ready, Reconciling and Stalled, each with observedGeneration.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bpacluster,categories=bpa
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels.cluster`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Provisioning",type=string,JSONPath=`.spec.provisioningCR`
// +kubebuilder:printcolumn:name="Software",type=string,JSONPath=`.spec.softwareCR`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Cluster ties a cluster's Provisioning and Software CRs together and reports one status.
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the cluster's CRs.
	// +required
	Spec ClusterSpec `json:"spec"`

	// status aggregates theirs.
	// +optional
	Status ClusterStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterList is a list of Clusters.
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Cluster{}, &ClusterList{})
}
