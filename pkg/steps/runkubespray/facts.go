package runkubespray

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// kubespray refuses --limit unless every node the limit leaves out has facts in its fact
// cache, which starts empty in every pod. Gathering them in the same pod (facts.yml over every
// node) made each scale run and each upgrade wave cost the whole cluster, and a node down
// stopped them all. So each run-kubespray hands the facts it gathered to the controller (its
// output FactsParam), which keeps them per cluster in a ConfigMap (KeptFacts, Merge); the next
// run mounts it and gathers again only the facts of the nodes outside its limit that are not
// fresh (FactsHelper decides, in the pod, against the inventory and the pinned host keys).

// FactsHelper restores the kept facts into Ansible's fact cache and saves what a run gathered
// (bpa_kubespray_facts.py): Python, which the kubespray image runs Ansible with.
//
//go:embed bpa_kubespray_facts.py
var FactsHelper string

// FactsHelperPath is where the step's pod finds FactsHelper: the scripts name it as it is.
var FactsHelperPath = path.Join(steps.InputsDir, "bpa_kubespray_facts.py")

// The kept facts, on their way from a run to the next.
const (
	// FactsParam is run-kubespray's output: the facts it gathered (KeptFacts, as JSON).
	FactsParam = "kubespray-facts"
	// FactsFile is the file FactsHelper writes FactsParam to, under steps.OutputsDir.
	FactsFile = "kubespray-facts.json"
	// FactsVolume is the cluster's kept facts (ConfigMap "<cluster>-kubespray-facts"), mounted
	// read-only at FactsCacheDir.
	FactsVolume   = "kubespray-facts"
	FactsCacheDir = "/etc/bpa/kubespray-facts"
	// FactsDir is Ansible's jsonfile fact cache in the pod: a folder of its own, so that what
	// a run gathered is told apart from the rest of /tmp.
	FactsDir = steps.TmpDir + "/kubespray-facts"
	// FactsIndexKey is the ConfigMap's index: node → when its facts were gathered (JSON).
	FactsIndexKey = "index.json"
)

// FactsMaxAge is how old kept facts may be and still stand for a node: kubespray's own
// fact_caching_timeout.
const FactsMaxAge = 24 * time.Hour

// MaxKeptFactsBytes bounds the kept facts of a cluster, below a ConfigMap's 1 MiB: up to 5 KiB
// a node kubespray set up (its facts as scale.yml leaves them), so some 180 nodes. Beyond it
// the oldest go first; their facts are gathered again by the next run that needs them.
const MaxKeptFactsBytes = 900 << 10

// KeptFacts are the facts a run gathered, by node.
type KeptFacts map[string]KeptEntry

// KeptEntry is one node's: when its facts were gathered (RFC 3339, UTC) and the gzip'd JSON
// entry FactsHelper reads back.
type KeptEntry struct {
	GatheredAt string `json:"gatheredAt"`
	Data       []byte `json:"data"`
}

// ParseKeptFacts reads FactsParam's value; an empty one keeps nothing.
func ParseKeptFacts(raw string) (KeptFacts, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var kept KeptFacts
	if err := json.Unmarshal([]byte(raw), &kept); err != nil {
		return nil, fmt.Errorf("%s: %w", FactsParam, err)
	}
	for node, e := range kept {
		if _, err := time.Parse(time.RFC3339, e.GatheredAt); err != nil {
			return nil, fmt.Errorf("%s: node %q: gatheredAt %q: %w", FactsParam, node, e.GatheredAt, err)
		}
		if !validKey(node) || node == FactsIndexKey {
			return nil, fmt.Errorf("%s: %q is no node name", FactsParam, node)
		}
	}
	return kept, nil
}

// validKey says whether a node name may be a ConfigMap key: the inventory's node names are DNS
// labels, which are.
func validKey(s string) bool { return len(validation.IsConfigMapKey(s)) == 0 }

// Merge is the cluster's kept facts (the ConfigMap's binary data and index) with what runs
// gathered: each node's newest entry, the oldest dropped beyond MaxKeptFactsBytes. changed says
// whether anything differs from what is kept.
func Merge(data map[string][]byte, index map[string]string, runs ...KeptFacts) (outData map[string][]byte, outIndex map[string]string, changed bool) {
	outData, outIndex = maps.Clone(data), maps.Clone(index)
	if outData == nil {
		outData = map[string][]byte{}
	}
	if outIndex == nil {
		outIndex = map[string]string{}
	}
	for _, run := range runs {
		for node, e := range run {
			if _, ok := outData[node]; ok && !newerThan(e.GatheredAt, outIndex[node]) {
				continue
			}
			outData[node], outIndex[node], changed = e.Data, e.GatheredAt, true
		}
	}
	size := 0
	for _, d := range outData {
		size += len(d)
	}
	oldest := slices.SortedFunc(maps.Keys(outData), func(a, b string) int {
		if c := strings.Compare(outIndex[a], outIndex[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for _, node := range oldest {
		if size <= MaxKeptFactsBytes {
			break
		}
		size -= len(outData[node])
		delete(outData, node)
		delete(outIndex, node)
		changed = true
	}
	return outData, outIndex, changed
}

// newerThan compares two RFC 3339 times; one that does not parse is older than any.
func newerThan(a, b string) bool {
	ta, errA := time.Parse(time.RFC3339, a)
	tb, errB := time.Parse(time.RFC3339, b)
	switch {
	case errA != nil:
		return false
	case errB != nil:
		return true
	}
	return ta.After(tb)
}

// FactsVolumeOf is the cluster's kept facts, for the Workflow's volumes: optional, since the
// first run of a cluster finds none.
func FactsVolumeOf(cluster string) corev1.Volume {
	return corev1.Volume{Name: FactsVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: cluster + bpav1.KubesprayFactsConfigMapSuffix},
		DefaultMode:          ptr.To[int32](0o444),
		Optional:             ptr.To(true),
	}}}
}

// FactsHelperArtifact places FactsHelper at FactsHelperPath: a constant raw artifact.
func FactsHelperArtifact() wfv1.Artifact {
	return wfv1.Artifact{
		Name:             "kubespray-facts-helper",
		Path:             FactsHelperPath,
		ArtifactLocation: wfv1.ArtifactLocation{Raw: &wfv1.RawArtifact{Data: FactsHelper}},
	}
}
