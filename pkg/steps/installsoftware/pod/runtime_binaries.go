package pod

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"oras.land/oras-go/v2/errdef"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
)

// installBinaries brings each binary on the node to the artifact the Software asks for: it
// resolves the version (the newest uploaded when none is pinned), reads the digest of the file
// on the node, and only when they differ copies the file over SFTP into a private temporary
// directory, installs it beside its destination, checks its digest there and renames it into
// place. A node has the old file or the new one, never half of either.
func (r *remote) installBinaries(ctx context.Context, reg *siteregistry.Client, bins []bpav1.BinaryPackage, report *installsoftware.Report) error {
	if len(bins) == 0 {
		return nil
	}
	if reg == nil {
		return errors.New("the Software names binaries, but install-software has no site registry (--registry)")
	}
	// One SFTP session for the node's copies, opened by the first.
	defer func() {
		if r.sftp != nil {
			_ = r.sftp.Close()
			r.sftp = nil
		}
	}()
	var final, waiting []error
	for _, b := range bins {
		got, err := r.installBinary(ctx, reg, b, namedDigest(r.opts.Digests, report.Role, b.Name))
		if err != nil {
			report.Failed = append(report.Failed, installsoftware.Failure{Package: "binary " + b.Name, Reason: err.Error()})
			if steps.IsRetryable(err) {
				waiting = append(waiting, err)
			} else {
				final = append(final, err)
			}
			continue
		}
		report.Binaries = append(report.Binaries, got)
	}
	return steps.Classified(final, waiting)
}

// namedDigest is the file a binary of a node of role (master, worker or both) was resolved to
// when the run was named; a node of both roles has one binary of the name, the same for both.
func namedDigest(digests map[string]string, role bpav1.NodeRoles, name string) string {
	for _, r := range role.List() {
		if d := digests[r+":"+name]; d != "" {
			return d
		}
	}
	return ""
}

// installBinary brings one binary to the file the registry resolves it to, which must be named
// (when named) the file the run was compiled for.
func (r *remote) installBinary(ctx context.Context, reg *siteregistry.Client, b bpav1.BinaryPackage, named string) (installsoftware.Binary, error) {
	a, err := reg.ResolveBinary(ctx, b.Name, b.Version)
	if err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			return installsoftware.Binary{}, fmt.Errorf("not in the site registry: %w", err)
		}
		return installsoftware.Binary{}, steps.Retryable(err) // the registry may answer later
	}
	if named != "" && a.File.Digest.String() != named {
		return installsoftware.Binary{}, fmt.Errorf("the site registry now serves %s %s as %s, and this run was named for %s: the controller starts a run for the new upload; this one installs nothing else",
			b.Name, a.Ref.Version, a.File.Digest, named)
	}
	dest := path.Join(b.InstallDirectory(), b.Name)
	want := a.File.Digest.String()
	out := installsoftware.Binary{NodeBinary: bpav1.NodeBinary{Name: b.Name, Version: a.Ref.Version, Digest: want, Path: dest}}
	have, err := r.fileDigest(ctx, dest)
	if err != nil {
		return out, err
	}
	if have == want {
		return out, nil
	}
	if err := r.copyBinary(ctx, reg, a, b.InstallDirectory(), b.Name); err != nil {
		return out, err
	}
	out.Changed = true
	return out, nil
}

// fileDigest is "sha256:<hex>" of a file on the node, "" when there is none.
func (r *remote) fileDigest(ctx context.Context, file string) (string, error) {
	line, err := sshexec.Quote(r.privileged(nil, "sha256sum", "--", file)...)
	if err != nil {
		return "", err
	}
	out, err := r.conn.Run(ctx, line)
	var exit *sshexec.ExitError
	if errors.As(err, &exit) && strings.Contains(exit.Stderr, "No such file") {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the digest of %s: %w", file, err)
	}
	sum, _, _ := strings.Cut(string(out), " ")
	if len(sum) != 64 {
		return "", fmt.Errorf("reading the digest of %s: sha256sum printed %q", file, out)
	}
	return "sha256:" + sum, nil
}

// copyBinary streams the artifact from the registry to the node: SFTP into a directory only the
// login user can read, then, as root, install(1) it beside the destination (same file system,
// so the final rename is atomic), check its digest where it lies, and rename it into place.
func (r *remote) copyBinary(ctx context.Context, reg *siteregistry.Client, a siteregistry.Artifact, dir, name string) (err error) {
	tmpOut, err := r.conn.Run(ctx, "mktemp -d")
	if err != nil {
		return fmt.Errorf("making a temporary directory: %w", err)
	}
	tmpDir := strings.TrimSpace(string(tmpOut))
	if !path.IsAbs(tmpDir) || strings.ContainsAny(tmpDir, " \n'\"\\$`") {
		return fmt.Errorf("mktemp -d printed %q", tmpOut)
	}
	defer func() {
		if rm, qerr := sshexec.Quote("rm", "-rf", "--", tmpDir); qerr == nil {
			_, _ = r.conn.Run(context.WithoutCancel(ctx), rm)
		}
	}()
	upload := path.Join(tmpDir, name)
	if err := r.sftpCopy(ctx, reg, a, upload); err != nil {
		return err
	}
	staged := path.Join(dir, "."+name+".bpa-new")
	defer func() {
		if err != nil {
			_ = r.run(context.WithoutCancel(ctx), r.privileged(nil, "rm", "-f", "--", staged))
		}
	}()
	if err := r.run(ctx, r.privileged(nil, "mkdir", "-p", "--", dir)); err != nil {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	if err := r.run(ctx, r.privileged(nil, "install", "-m", "0755", "-o", "root", "-g", "root", "--", upload, staged)); err != nil {
		return fmt.Errorf("installing into %s: %w", dir, err)
	}
	got, err := r.fileDigest(ctx, staged)
	if err != nil {
		return err
	}
	if got != a.File.Digest.String() {
		return fmt.Errorf("the copy on the node has digest %s, the registry's file %s", got, a.File.Digest)
	}
	if err := r.run(ctx, r.privileged(nil, "mv", "-f", "--", staged, path.Join(dir, name))); err != nil {
		return fmt.Errorf("renaming into place: %w", err)
	}
	return nil
}

// sftpCopy writes the artifact's file to target on the node; the registry's reader checks the
// digest as it is read, so a corrupt blob fails the copy.
func (r *remote) sftpCopy(ctx context.Context, reg *siteregistry.Client, a siteregistry.Artifact, target string) error {
	src, err := reg.OpenFile(ctx, a)
	if err != nil {
		return steps.Retryable(err)
	}
	defer func() { _ = src.Close() }()
	if r.sftp == nil {
		if r.sftp, err = r.conn.SFTP(); err != nil {
			if strings.Contains(err.Error(), "subsystem request failed") {
				return fmt.Errorf("%w: the node's sshd serves no sftp subsystem (sshd_config: Subsystem sftp), which binaries are copied through", err)
			}
			return steps.Retryable(err)
		}
	}
	dst, err := r.sftp.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return fmt.Errorf("creating %s over SFTP: %w", target, err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		return fmt.Errorf("copying %s over SFTP: %w", a.Ref, err)
	}
	if err := dst.Close(); err != nil {
		return fmt.Errorf("copying %s over SFTP: %w", a.Ref, err)
	}
	return nil
}
