package checknodes

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes"
)

// Problem is what is wrong with one node the run touched.
type Problem struct {
	Node string
	// What is wrong, in the order found: "not in the cluster", "NotReady", "cordoned",
	// "v1.33.4 instead of v1.34.3".
	What []string
}

func (p Problem) String() string { return p.Node + ": " + strings.Join(p.What, ", ") }

// Problems compares the cluster's nodes with those the run touched (want, in the order the
// plan names them) at version ("v1.34.3"; empty checks no version). No problem means every
// wanted node is Ready, schedulable and at the version.
func Problems(nodes []corev1.Node, want []string, version string) []Problem {
	byName := make(map[string]corev1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	var problems []Problem
	for _, name := range want {
		n, ok := byName[name]
		if !ok {
			problems = append(problems, Problem{Node: name, What: []string{"not in the cluster"}})
			continue
		}
		var what []string
		if !reportnodes.Ready(n) {
			what = append(what, "NotReady")
		}
		if n.Spec.Unschedulable {
			what = append(what, "cordoned")
		}
		if got := n.Status.NodeInfo.KubeletVersion; version != "" && got != version {
			what = append(what, fmt.Sprintf("%s instead of %s", shown(got), version))
		}
		if len(what) > 0 {
			problems = append(problems, Problem{Node: name, What: what})
		}
	}
	return problems
}

// Failure is the step's message when problems remain at the end of its wait: each node and
// what is wrong, then what an operator does about it.
func Failure(problems []Problem, checked int) error {
	var lines []string
	for _, p := range problems {
		lines = append(lines, p.String())
	}
	hint := "bring the node back or fix it (kubectl uncordon NODE for a node left cordoned), then retry this step"
	return fmt.Errorf("%d of %d nodes the run touched are not as it should leave them: %s; %s",
		len(problems), checked, strings.Join(lines, "; "), hint)
}

// ParseNodes reads the --nodes flag: node names (DNS-1123 labels, as kubespray's inventory
// names them), comma-separated, at least one.
func ParseNodes(flag string) ([]string, error) {
	if flag == "" {
		return nil, fmt.Errorf("--nodes: no node to check")
	}
	names := strings.Split(flag, ",")
	for _, n := range names {
		if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
			return nil, fmt.Errorf("--nodes: node %q: %s", n, strings.Join(msgs, "; "))
		}
	}
	return names, nil
}

// ParseVersion reads the --version flag: empty, or "v" and a version without spaces.
func ParseVersion(flag string) (string, error) {
	if flag == "" {
		return "", nil
	}
	if !strings.HasPrefix(flag, "v") || len(flag) > 64 || strings.ContainsFunc(flag, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
		return "", fmt.Errorf("--version %q: want a kubelet version like v1.34.3", flag)
	}
	return flag, nil
}

// Names lists nodes as the --nodes flag and the step's messages write them.
func Names(nodes []string) string { return strings.Join(nodes, ",") }

// shown is a kubelet version as the message says it: the cluster's own string when it is a
// plain one, quoted and cut short otherwise, since the message reaches the CR's status.
func shown(version string) string {
	switch {
	case version == "":
		return "no version reported"
	case len(version) > 64 || strings.ContainsFunc(version, func(c rune) bool { return c <= ' ' || c == 0x7f || c > 0x7e }):
		return strconv.Quote(truncate(version, 64))
	}
	return version
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// WithoutSilent are the nodes to check after a run that left out the silent ones (those
// pin-host-keys went on without), in their order, and the silent ones among nodes, which the
// check leaves out too. Every node silent is an error: nothing is left to check.
func WithoutSilent(nodes []string, silent []bpav1.SilentNode) (checked []string, left []bpav1.SilentNode, err error) {
	for _, n := range silent {
		if slices.Contains(nodes, n.Node) && !slices.ContainsFunc(left, func(l bpav1.SilentNode) bool { return l.Node == n.Node }) {
			left = append(left, n)
		}
	}
	for _, name := range nodes {
		if !slices.ContainsFunc(left, func(l bpav1.SilentNode) bool { return l.Node == name }) {
			checked = append(checked, name)
		}
	}
	if len(checked) == 0 {
		return nil, left, errors.New("every node to check did not answer when the run began")
	}
	return checked, left, nil
}
