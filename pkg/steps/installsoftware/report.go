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
	// Failed lists the packages and binaries that could not be installed, and why.
	Failed []Failure `json:"failed,omitempty"`
	// Binaries lists every binary of the CR as installed after the run.
	Binaries []Binary `json:"binaries,omitempty"`
}

// Binary is one binary on the node after the run.
type Binary struct {
	Name string `json:"name"`
	// Version is the version installed (resolved, when the CR names none).
	Version string `json:"version"`
	// Digest is the installed file's sha256, read on the node.
	Digest string `json:"digest"`
	Path   string `json:"path"`
	// Changed: the run copied it; otherwise the node had it already.
	Changed bool `json:"changed,omitempty"`
}

// Failure is a package (or "binary NAME") that could not be installed.
type Failure struct {
	Package string `json:"package"`
	Reason  string `json:"reason"`
}
