package installsoftware

import bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"

// Report is what install-software outputs for one node, as JSON: the controller mirrors it
// into the Software's status (bpav1.NodeSoftwareReport: its counts, its failures as lines, its
// binaries as they are).
type Report struct {
	// Node is the node's label.
	Node string `json:"node"`
	// Role of the node (master, worker, or master,worker): which package lists applied.
	Role bpav1.NodeRoles `json:"role"`
	// PackageManager found on the node: apt or dnf.
	PackageManager string `json:"packageManager,omitempty"`
	// Installed lists every package of the CR as installed after the run, as name=version.
	Installed []string `json:"installed,omitempty"`
	// Changed lists the packages installed or upgraded by the run, as name=version.
	Changed []string `json:"changed,omitempty"`
	// Unchanged lists the packages that were already as the CR asks.
	Unchanged []string `json:"unchanged,omitempty"`
	// Failed lists the packages and binaries that could not be installed, and why.
	Failed []Failure `json:"failed,omitempty"`
	// Binaries lists every binary of the CR as installed after the run.
	Binaries []Binary `json:"binaries,omitempty"`
}

// Binary is one binary on the node after the run: what the Software's status keeps of it, and
// whether this run copied it.
type Binary struct {
	bpav1.NodeBinary
	// Changed: the run copied it; otherwise the node had it already.
	Changed bool `json:"changed,omitempty"`
}

// Failure is a package (or "binary NAME") that could not be installed.
type Failure struct {
	Package string `json:"package"`
	Reason  string `json:"reason"`
}
