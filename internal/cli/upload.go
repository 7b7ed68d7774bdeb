package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

type uploadFlags struct {
	siteregistry.Flags
	maxSize, chunkSize string
	stateDir, output   string
	replace            bool
	// images
	from                            string
	sourcePlainHTTP, sourceNoConfig bool
}

func newUploadCommand() *cobra.Command {
	f := &uploadFlags{}
	cmd := &cobra.Command{
		Use:   "upload binary|os-image|file-set|images ...",
		Short: "Upload binaries, OS images, file sets and container images to the site's OCI registry",
		Long: `Upload binaries, OS images, file sets and container images to the site's OCI registry.

A binary or an OS image becomes an OCI artifact, <prefix>/binaries/NAME:VERSION or
<prefix>/os-images/NAME:VERSION, holding the file under its own name. A file set (kubespray's
offline files, the KUD plugins' manifests) becomes <prefix>/files/NAME:VERSION, one layer per
file under its path in the directory. Files go up in chunks; an upload that is interrupted
resumes where the registry stopped when the same command runs again. A version names one file
or one set: uploading other content under it is refused unless --replace.

The registry and its account come from flags or from BPA_REGISTRY, BPA_REGISTRY_USERNAME and
BPA_REGISTRY_PASSWORD (or --password-stdin); a password is never a flag.`,
		Args: cobra.NoArgs,
	}
	pf := cmd.PersistentFlags()
	f.AddTo(pf)
	pf.StringVarP(&f.output, "output", "o", "text", "output format: text or json")

	file := func(kind artifacts.Kind, what string) *cobra.Command {
		c := &cobra.Command{
			Use:   string(kind) + " NAME:VERSION FILE",
			Short: "Upload " + what + " as an OCI artifact",
			Args:  cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				return runUploadFile(cmd, f, kind, args[0], args[1])
			},
		}
		if kind == artifacts.FileSet {
			c.Use = string(kind) + " NAME:VERSION DIRECTORY"
			c.Long = `Upload the regular files under DIRECTORY as one OCI artifact, files/NAME:VERSION, each file
under its path in DIRECTORY; serve-files serves it at /files/NAME/VERSION/PATH.

For kubespray's files_repo, upload what kubespray's contrib/offline/manage-offline-files.sh
downloads (its offline-files directory) as kubespray:TAG, TAG the kubespray image's. For the
KUD plugins, a directory of PLUGIN.yaml files. Symbolic links and hidden files are refused, so
the set is exactly what the directory shows. --max-size bounds the whole set.`
			c.RunE = func(cmd *cobra.Command, args []string) error { return runUploadSet(cmd, f, args[0], args[1]) }
		}
		c.Flags().StringVar(&f.maxSize, "max-size", "32Gi", "refuse a file larger than this (a Kubernetes quantity)")
		c.Flags().StringVar(&f.chunkSize, "chunk-size", "16Mi", "size of one chunk of the upload")
		c.Flags().StringVar(&f.stateDir, "state-dir", defaultStateDir(), "where interrupted uploads are remembered, to resume them")
		c.Flags().BoolVar(&f.replace, "replace", false, "let VERSION move to another file")
		return c
	}
	images := &cobra.Command{
		Use:   "images --from LIST",
		Short: "Copy the container images a list names into the site registry",
		Long: `Copy the container images a list names into the site registry.

One image per line: SOURCE [TARGET]. SOURCE is an image reference (host/path:tag, or
host/path@sha256:... with a TARGET) or oci:DIR:TAG for an OCI image layout on disk. TARGET,
path:tag under the site prefix, defaults to the source's path and tag. Blanks and '#' comments
are skipped. Every platform of a multi-platform image is copied; blobs the registry already
holds are not sent again, so running a list again finishes what an interruption left.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runUploadImages(cmd, f) },
	}
	images.Flags().StringVar(&f.from, "from", "", "the images list; - for standard input (required)")
	images.Flags().BoolVar(&f.sourcePlainHTTP, "source-plain-http", false, "read source registries over HTTP (for development)")
	images.Flags().BoolVar(&f.sourceNoConfig, "source-anonymous", false, "read sources anonymously, not with the docker config's credentials")
	_ = images.MarkFlagRequired("from")
	cmd.AddCommand(file(artifacts.Binary, "a binary package"), file(artifacts.OSImage, "a Linux OS image"),
		file(artifacts.FileSet, "a directory of files"), images)
	return cmd
}

func defaultStateDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "bpa-workflow-controller", "uploads")
}

func (f *uploadFlags) siteClient(stdin io.Reader) (*siteregistry.Client, error) {
	if f.output != "text" && f.output != "json" {
		return nil, fmt.Errorf("--output %q: want text or json", f.output)
	}
	return f.Client(stdin)
}

func quantity(flag, s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("--%s %q: want a positive size such as 512Mi or 8Gi", flag, s)
	}
	return q.Value(), nil
}

// uploadResult is what -o json prints for each upload.
type uploadResult struct {
	Reference      string `json:"reference"`
	ManifestDigest string `json:"manifestDigest"`
	FileDigest     string `json:"fileDigest,omitempty"`
	Files          int    `json:"files,omitempty"`
	Size           int64  `json:"size,omitempty"`
	ResumedAt      int64  `json:"resumedAt,omitempty"`
	Sent           *int64 `json:"sent,omitempty"`
	Source         string `json:"source,omitempty"`
}

// pushSetup reads what every file upload needs: the reference, the bounds and the client.
func (f *uploadFlags) pushSetup(cmd *cobra.Command, kind artifacts.Kind, refArg string) (artifacts.Ref, siteregistry.PushOptions, *siteregistry.Client, error) {
	ref, err := artifacts.ParseRef(kind, refArg)
	if err != nil {
		return ref, siteregistry.PushOptions{}, nil, err
	}
	maxSize, err := quantity("max-size", f.maxSize)
	if err != nil {
		return ref, siteregistry.PushOptions{}, nil, err
	}
	chunk, err := quantity("chunk-size", f.chunkSize)
	if err != nil {
		return ref, siteregistry.PushOptions{}, nil, err
	}
	client, err := f.siteClient(cmd.InOrStdin())
	opts := siteregistry.PushOptions{
		ChunkSize: chunk, MaxSize: maxSize, StateDir: f.stateDir, Replace: f.replace, Progress: progressPrinter(cmd.ErrOrStderr()),
	}
	return ref, opts, client, err
}

func runUploadSet(cmd *cobra.Command, f *uploadFlags, refArg, dir string) error {
	ref, opts, client, err := f.pushSetup(cmd, artifacts.FileSet, refArg)
	if err != nil {
		return err
	}
	pushed, err := client.PushFileSet(cmd.Context(), ref, dir, opts)
	if err != nil {
		if pushed.Sent > 0 && f.stateDir != "" {
			return fmt.Errorf("%w (run the same command again to resume)", err)
		}
		return err
	}
	return printUploads(cmd.OutOrStdout(), f.output, []uploadResult{{
		Reference: pushed.Reference, ManifestDigest: pushed.Manifest.Digest.String(),
		Files: pushed.Files, Size: pushed.Size, Sent: &pushed.Sent,
	}})
}

func runUploadFile(cmd *cobra.Command, f *uploadFlags, kind artifacts.Kind, refArg, path string) error {
	ref, opts, client, err := f.pushSetup(cmd, kind, refArg)
	if err != nil {
		return err
	}
	pushed, err := client.PushFile(cmd.Context(), ref, path, opts)
	if err != nil {
		if pushed.Sent > 0 && f.stateDir != "" {
			return fmt.Errorf("%w (run the same command again to resume)", err)
		}
		return err
	}
	res := uploadResult{
		Reference: pushed.Reference, ManifestDigest: pushed.Manifest.Digest.String(),
		FileDigest: pushed.File.Digest.String(), Size: pushed.File.Size, ResumedAt: pushed.ResumedAt, Sent: &pushed.Sent,
	}
	return printUploads(cmd.OutOrStdout(), f.output, []uploadResult{res})
}

func runUploadImages(cmd *cobra.Command, f *uploadFlags) error {
	var in io.Reader
	if f.from == "-" {
		if f.PasswordStdin {
			return errors.New("--from - and --password-stdin both read standard input: give one of them a file")
		}
		in = cmd.InOrStdin()
	} else {
		file, err := os.Open(f.from)
		if err != nil {
			return fmt.Errorf("--from: %w", err)
		}
		defer func() { _ = file.Close() }()
		in = file
	}
	list, err := siteregistry.ParseImageList(in)
	if err != nil {
		return err
	}
	client, err := f.siteClient(cmd.InOrStdin())
	if err != nil {
		return err
	}
	sources, err := siteregistry.NewSources(siteregistry.SourceOptions{PlainHTTP: f.sourcePlainHTTP, DockerConfig: !f.sourceNoConfig})
	if err != nil {
		return err
	}
	var results []uploadResult
	for i, img := range list {
		fmt.Fprintf(cmd.ErrOrStderr(), "copying %d/%d %s\n", i+1, len(list), img.Source) //nolint:gosec // G705: a terminal, not a web page
		copied, err := client.CopyImage(cmd.Context(), img, sources)
		if err != nil {
			// What was copied stays copied: say so, since stdout has nothing on failure.
			return fmt.Errorf("%w (%d of %d images copied before it; run the list again to finish)", err, i, len(list))
		}
		results = append(results, uploadResult{Reference: copied.Reference, ManifestDigest: copied.Manifest.Digest.String(), Source: copied.Source})
	}
	return printUploads(cmd.OutOrStdout(), f.output, results)
}

func printUploads(w io.Writer, format string, results []uploadResult) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if len(results) == 1 {
			return enc.Encode(results[0])
		}
		return enc.Encode(results)
	}
	for _, r := range results {
		line := r.Reference + " " + r.ManifestDigest
		if r.FileDigest != "" {
			line += fmt.Sprintf(" file %s %s", r.FileDigest, artifacts.HumanBytes(r.Size))
		}
		if r.Files > 0 {
			line += fmt.Sprintf(" %d files %s", r.Files, artifacts.HumanBytes(r.Size))
		}
		if r.ResumedAt > 0 {
			line += " resumed at " + artifacts.HumanBytes(r.ResumedAt)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// progressPrinter reports an upload on stderr every 10%, and where a resumed one picked up.
func progressPrinter(w io.Writer) func(siteregistry.Progress) {
	last := -1
	return func(p siteregistry.Progress) {
		pct := 100
		if p.Total > 0 {
			pct = int(p.Done * 100 / p.Total)
		}
		if last < 0 && p.ResumedAt > 0 {
			fmt.Fprintf(w, "resuming %s at %s of %s\n", p.File, artifacts.HumanBytes(p.ResumedAt), artifacts.HumanBytes(p.Total))
		}
		if last >= 0 && pct/10 == last/10 && pct != 100 {
			return
		}
		last = pct
		fmt.Fprintf(w, "uploading %s: %s of %s (%d%%)\n", p.File, artifacts.HumanBytes(p.Done), artifacts.HumanBytes(p.Total), pct)
	}
}
