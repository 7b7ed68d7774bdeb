package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// clusterPart is one of the CRs a Cluster aggregates.
type clusterPart struct {
	kind, name string
	waiting    string // the Cluster's reason while this part is not Ready
	conds      []metav1.Condition
	generation int64
}

// aggregateCluster writes a Cluster's status from its Provisioning and Software (nil: not
// found) and returns its summary: Ready when both are; Stalled when either is; otherwise
// Reconciling with the message of the one still at work. The phase is the Provisioning's
// until it succeeds, then the Software's.
func aggregateCluster(c *bpav1.Cluster, prov *bpav1.Provisioning, sw *bpav1.Software) summary {
	st := &c.Status
	st.ObservedGeneration = c.Generation
	st.ProvisioningPhase, st.SoftwarePhase, st.KubeconfigSecretName, st.Message = "", "", "", ""
	if prov == nil {
		st.Phase = ""
		st.Message = fmt.Sprintf("Provisioning %s not found in namespace %s", c.Spec.ProvisioningCR, c.Namespace)
		return summary{reconciling, bpav1.ReasonNotFound, st.Message}
	}
	st.ProvisioningPhase = prov.Status.Phase
	st.KubeconfigSecretName = prov.Status.KubeconfigSecretName
	st.Phase = prov.Status.Phase
	if sw != nil {
		st.SoftwarePhase = sw.Status.Phase
	}
	parts := []clusterPart{{"Provisioning", prov.Name, bpav1.ReasonWaitingForProvisioning, prov.Status.Conditions, prov.Generation}}
	if sw != nil {
		parts = append(parts, clusterPart{"Software", sw.Name, bpav1.ReasonWaitingForSoftware, sw.Status.Conditions, sw.Generation})
	}
	for _, part := range parts {
		if stalledC := meta.FindStatusCondition(part.conds, bpav1.ConditionStalled); stalledC != nil && stalledC.Status == metav1.ConditionTrue {
			st.Message = fmt.Sprintf("%s %s: %s", part.kind, part.name, stalledC.Message)
			return summary{stalled, stalledC.Reason, st.Message}
		}
	}
	for _, part := range parts {
		if !isReady(part.conds, part.generation) {
			msg := "not reconciled yet"
			if rc := meta.FindStatusCondition(part.conds, bpav1.ConditionReady); rc != nil {
				msg = rc.Message
			}
			if part.kind == "Software" && prov.Status.Phase == bpav1.PhaseSucceeded {
				st.Phase = sw.Status.Phase
			}
			st.Message = fmt.Sprintf("%s %s: %s", part.kind, part.name, msg)
			return summary{reconciling, part.waiting, st.Message}
		}
	}
	if c.Spec.SoftwareCR != "" && sw == nil {
		st.Message = fmt.Sprintf("Software %s not found in namespace %s", c.Spec.SoftwareCR, c.Namespace)
		return summary{reconciling, bpav1.ReasonNotFound, st.Message}
	}
	if sw != nil && sw.Status.Phase != "" {
		st.Phase = sw.Status.Phase
	}
	return summary{ready, bpav1.ReasonClusterReady, "the cluster is provisioned and its software installed"}
}
