package installsoftware

// Report is what install-software outputs for one node, as JSON: the controller mirrors it
// into the Software's status.
type Report struct {
	// Node is the node's label.
	Node string `json:"node"`
	// Role of the node (master, worker, or master,worker): which package lists applied.
	Role string `json:"role"`
	// PackageManager found on the node: apt or dnf.
	PackageManager string `json:"packageManager,omitempty"`
	// Installed lists every package of the CR as installed after the run, as name=version.
	Installed []string `json:"installed,omitempty"`
	// Changed lists the packages installed or upgraded by the run, as name=version.
	Changed []string `json:"changed,omitempty"`
	// Unchanged lists the packages that were already as the CR asks.
	Unchanged []string `json:"unchanged,omitempty"`
	// Failed lists the packages that could not be installed, and why.
	Failed []Failure `json:"failed,omitempty"`
}

// Failure is a package that could not be installed.
type Failure struct {
	Package string `json:"package"`
	Reason  string `json:"reason"`
}
