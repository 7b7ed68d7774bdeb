package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

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

// newWorkflow is the part both kinds share: name, labels, owner, parameters naming the CR,
// the per-cluster mutex, pod security and scratch space.
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
