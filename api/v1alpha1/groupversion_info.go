// Package v1alpha1 holds the bpa.akraino.org/v1alpha1 API: Provisioning, Software and Cluster.
//
// The shapes follow the Akraino ICN Binary Provisioning Agent specification, so BPA YAML
// (masters/workers as one-key maps, KUDPlugins, PodSubnet, package items that are a name or
// {name: {version: v}}) applies unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=bpa.akraino.org
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "bpa.akraino.org", Version: "v1alpha1"}

	// SchemeBuilder adds the types of this API to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
