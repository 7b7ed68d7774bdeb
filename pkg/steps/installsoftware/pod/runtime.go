package pod

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"

	"github.com/pkg/sftp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// InstallOptions say how install-software reaches a node and the site registry.
type InstallOptions struct {
	SSH stepcmd.SSHOptions
	// Registry is the site registry binaries come from; nil: a Software naming binaries fails.
	Registry *siteregistry.Client
	// Digests are the files the run was named for ("role:name" → digest): a binary the
	// registry now resolves to another file fails, rather than install what the run was not
	// named for. Empty: whatever the registry resolves (a run compiled without them).
	Digests map[string]string
}

// Run brings one node's packages to what the Software asks for its role: it
// detects the package manager (apt or dnf), reads the installed versions, installs or
// upgrades only what differs (pinned versions exactly, unpinned ones present), reads the
// versions again, then brings the role's binaries to the site registry's files (installBinaries),
// and reports. Every word sent to the node is validated and quoted. A package or binary that is
// still not as asked afterwards is reported failed, with the reason, and makes the step fail
// after the report is written.
func Run(ctx context.Context, c client.Client, ref stepcmd.CRRef, node string, role bpav1.NodeRoles, address string, opts InstallOptions) (installsoftware.Report, error) {
	report := installsoftware.Report{Node: node, Role: role}
	sw := &bpav1.Software{}
	if err := stepcmd.Get(ctx, c, ref, sw, "Software"); err != nil {
		return report, err
	}
	want, err := installsoftware.PackagesFor(&sw.Spec, role)
	if err != nil {
		return report, err
	}
	bins, err := installsoftware.BinariesFor(&sw.Spec, role)
	if err != nil {
		return report, err
	}
	if net.ParseIP(address) == nil {
		return report, fmt.Errorf("node %q: address %q is not an IP address", node, address)
	}
	user := sw.Spec.SSH.LoginUser()
	cfg, err := opts.SSH.Login(c, sw.Namespace, sw.Labels[bpav1.ClusterLabel], user)
	if err != nil {
		return report, err
	}
	conn, err := sshexec.Dial(ctx, cfg, net.JoinHostPort(address, strconv.Itoa(opts.SSH.Port)))
	if err != nil {
		return report, stepcmd.RetryableUnlessHostKey(fmt.Errorf("node %q: %w", node, err))
	}
	defer conn.Close()
	r := &remote{conn: conn, sudo: user != bpav1.DefaultSSHUser, opts: opts}

	var pkgErr error
	if len(want) > 0 {
		if pkgErr, err = r.installPackages(ctx, want, &report); err != nil {
			return report, stepcmd.WaitIfLost(fmt.Errorf("node %q: %w", node, err))
		}
	}
	pkgFailed := len(report.Failed)
	binErr := r.installBinaries(ctx, opts.Registry, bins, &report)
	if binErr != nil && len(report.Failed) == pkgFailed { // no binary could even be tried
		return report, stepcmd.WaitIfLost(fmt.Errorf("node %q: %w", node, binErr))
	}
	if len(report.Failed) > 0 {
		names := make([]string, 0, len(report.Failed))
		for _, f := range report.Failed {
			names = append(names, f.Package)
		}
		// The first reason says why (the package manager's own error, usually the same for
		// all): it is what the operator reads in the CR's status.
		err := fmt.Errorf("node %q: %d of %d packages not as asked: %s (%s)", node, len(report.Failed), len(want)+len(bins), strings.Join(names, ", "), report.Failed[0].Reason)
		// Waiting (a lock held, a mirror or registry not answering) is worth it only when it
		// can cure every failure: a package the repository lacks stays final beside a binary
		// the registry could not serve yet.
		pkgWaits := pkgFailed == 0 || steps.IsRetryable(pkgErr)
		binWaits := len(report.Failed) == pkgFailed || steps.IsRetryable(binErr)
		if pkgWaits && binWaits {
			return report, steps.Retryable(err)
		}
		return report, err
	}
	return report, nil
}

// installPackages brings the node's packages to want: it detects the package manager (apt or
// dnf), reads the installed versions, installs or upgrades only what differs, reads them again
// and reports. It returns the package manager's own error (the reason of the failures it
// reports), and an error when it could not even tell.
func (r *remote) installPackages(ctx context.Context, want []bpav1.SoftwarePackage, report *installsoftware.Report) (installErr, err error) {
	pm, err := r.packageManager(ctx)
	if err != nil {
		return nil, err
	}
	report.PackageManager = pm
	have, err := r.installed(ctx, pm, want)
	if err != nil {
		return nil, err
	}
	toInstall, unchanged := installsoftware.Decide(want, have)
	report.Unchanged = unchanged
	if len(toInstall) > 0 {
		installErr = r.install(ctx, pm, toInstall)
		if have, err = r.installed(ctx, pm, want); err != nil {
			return installErr, fmt.Errorf("after the install: %w", err)
		}
	}
	for _, p := range want {
		if v, ok := have[p.Name]; ok {
			report.Installed = append(report.Installed, p.Name+"="+v)
		}
	}
	for _, p := range toInstall {
		v, ok := have[p.Name]
		switch {
		case ok && (p.Version == "" || p.Version == v):
			report.Changed = append(report.Changed, p.Name+"="+v)
		default:
			report.Failed = append(report.Failed, installsoftware.Failure{Package: p.Name, Reason: failureReason(p, v, ok, installErr)})
		}
	}
	return installErr, nil
}

func failureReason(p bpav1.SoftwarePackage, have string, installed bool, installErr error) string {
	if installErr != nil {
		return installErr.Error()
	}
	if !installed {
		return "not installed after the install"
	}
	return fmt.Sprintf("version %s after the install, want %s", have, p.Version)
}

// remote runs the package manager's commands on one node, and copies its binaries.
type remote struct {
	conn *sshexec.Client
	sudo bool
	opts InstallOptions
	// sftp is the node's SFTP session while binaries are copied (installBinaries).
	sftp *sftp.Client
}

// privileged is a command run as root, with the environment assignments env.
func (r *remote) privileged(env []string, words ...string) []string {
	if r.sudo {
		return sshexec.Privileged(env, words...)
	}
	return sshexec.AsRoot(env, words...)
}

// packageManager finds apt (dpkg-query and apt-get) or dnf (rpm and dnf) on the node.
func (r *remote) packageManager(ctx context.Context) (string, error) {
	cmd, err := sshexec.Quote("command", "-v", "dpkg-query", "apt-get", "rpm", "dnf")
	if err != nil {
		return "", err
	}
	out, err := r.conn.Run(ctx, cmd)
	var exit *sshexec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return "", err
	}
	found := map[string]bool{}
	for _, line := range strings.Fields(string(out)) {
		found[path.Base(line)] = true
	}
	switch {
	case found["dpkg-query"] && found["apt-get"]:
		return installsoftware.Apt, nil
	case found["rpm"] && found["dnf"]:
		return installsoftware.Dnf, nil
	}
	return "", fmt.Errorf("neither apt (dpkg-query, apt-get) nor dnf (rpm, dnf) found")
}

// installed reads the installed versions of the wanted packages.
func (r *remote) installed(ctx context.Context, pm string, want []bpav1.SoftwarePackage) (installsoftware.Installed, error) {
	names := installsoftware.Names(want)
	var head []string
	var format string
	if pm == installsoftware.Apt {
		head = []string{"dpkg-query", "-W"}
		format = "--showformat=" + sshexec.Trusted(installsoftware.DpkgFormat)
	} else {
		head = []string{"rpm", "-q"}
		format = "--queryformat=" + sshexec.Trusted(installsoftware.RPMFormat)
	}
	h, err := sshexec.Quote(head...)
	if err != nil {
		return nil, err
	}
	tail, err := sshexec.Quote(append([]string{"--"}, names...)...)
	if err != nil {
		return nil, err
	}
	out, err := r.conn.Run(ctx, h+" "+format+" "+tail)
	var exit *sshexec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.Status != 1) { // 1: some are not installed
		return nil, fmt.Errorf("reading installed versions: %w", err)
	}
	if pm == installsoftware.Apt {
		return installsoftware.ParseDpkgQuery(out), nil
	}
	return installsoftware.ParseRPMQuery(out), nil
}

// install refreshes the package index, then installs or upgrades the packages in one
// transaction. A refresh or install that finds the package manager's lock held by another run
// (unattended upgrades, say) is worth waiting for: retryable.
func (r *remote) install(ctx context.Context, pm string, pkgs []bpav1.SoftwarePackage) error {
	words := installsoftware.InstallWords(pm, pkgs)
	refresh := r.privileged(nil, "dnf", "makecache", "-q")
	install := r.privileged(nil, append([]string{"dnf", "install", "-y", "-q", "--allowerasing"}, words...)...)
	if pm == installsoftware.Apt {
		noninteractive := []string{"DEBIAN_FRONTEND=noninteractive"}
		refresh = r.privileged(noninteractive, "apt-get", "update", "-q")
		install = r.privileged(noninteractive, append([]string{"apt-get", "install", "-y", "-q",
			"--no-install-recommends", "--allow-downgrades", "--"}, words...)...)
	}
	if err := r.run(ctx, refresh); err != nil {
		if refused := sshexec.SudoRefused(err); refused != nil {
			return refused
		}
		// A mirror that does not answer now may later: retryable, whatever else the reason.
		return steps.Retryable(fmt.Errorf("refreshing the package index: %w", err))
	}
	if err := r.run(ctx, install); err != nil {
		if locked(err) || sshexec.Lost(err) {
			return steps.Retryable(err)
		}
		return err
	}
	return nil
}

func (r *remote) run(ctx context.Context, words []string) error {
	line, err := sshexec.Quote(words...)
	if err != nil {
		return err
	}
	_, err = r.conn.Run(ctx, line)
	return err
}

// locked reports whether a package manager failed on a lock another run holds (apt: "Could not
// get lock ..., is another process using it?"; dnf: "Waiting for process with pid").
func locked(err error) bool {
	msg := err.Error()
	var exit *sshexec.ExitError
	if errors.As(err, &exit) {
		msg += "\n" + exit.Stderr
	}
	for _, sign := range []string{"Could not get lock", "Unable to acquire the dpkg frontend lock", "Waiting for process with pid"} {
		if strings.Contains(msg, sign) {
			return true
		}
	}
	return false
}
