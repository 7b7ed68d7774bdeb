package checkleavingnodes

import (
	"fmt"
	"slices"
	"strings"
)

// RemovalVars are the variables of kubespray's remove-node.yml that say how to remove: with
// every leaving node answering, each is drained and reset (kubespray's defaults, written out);
// with any not answering, none is reset and the drain may fail (reset_nodes=false,
// allow_ungraceful_removal=true, kubespray's documented way to remove a node that is not
// online). The choice is for the whole run: kubespray's variables are not per node.
type RemovalVars struct {
	ResetNodes             bool `json:"reset_nodes"`
	AllowUngracefulRemoval bool `json:"allow_ungraceful_removal"`
}

// Decide chooses the removal from which leaving nodes do not answer (their labels).
func Decide(notAnswering []string) RemovalVars {
	if len(notAnswering) == 0 {
		return RemovalVars{ResetNodes: true}
	}
	return RemovalVars{AllowUngracefulRemoval: true}
}

// Summary says what Decide chose and why, for the step's log and the Provisioning's Event.
func Summary(leaving, notAnswering []string) string {
	if len(notAnswering) == 0 {
		return fmt.Sprintf("every leaving node answers (%s): each is drained and reset", strings.Join(leaving, ", "))
	}
	notAnswering = slices.Sorted(slices.Values(notAnswering))
	return fmt.Sprintf("leaving node(s) %s do not answer: the %d leaving node(s) are removed from the cluster without a drain that must succeed and without a reset (reset_nodes=false, allow_ungraceful_removal=true)",
		strings.Join(notAnswering, ", "), len(leaving))
}
