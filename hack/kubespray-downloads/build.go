package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/hack/internal/ociimage"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testcluster"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubespraydownloads"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
)

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kubespray-downloads: "+format+"\n", args...)
}

func run(ctx context.Context, o options) error {
	start := time.Now()
	downloads, filesRepo, registry, err := list(ctx, o.kubespray, o.kubeVersion)
	if err != nil {
		return err
	}
	plans, err := planFor(downloads)
	if err != nil {
		return err
	}
	say("kubespray downloads %d files and images for the test cluster%s", len(plans), o.forVersion())

	// Every tool at the version kubespray asks for, then built (or found in the cache).
	sources := map[string]source{}
	versionsOf := map[string]string{} // module folder → the version its go.mod pins
	for _, p := range plans {
		src, err := sourceOf(o, p, filesRepo, versionsOf)
		if err != nil {
			return err
		}
		if prev, ok := sources[p.Recipe.Tool]; ok && prev.Version != src.Version {
			return fmt.Errorf("%s is wanted at both %s and %s", p.Recipe.Tool, prev.Version, src.Version)
		}
		sources[p.Recipe.Tool] = src
	}
	if o.planOnly {
		for _, p := range plans {
			src := sources[p.Recipe.Tool]
			fmt.Printf("%-32s %-8s %s\n", p.Download.Name, src.Version, describe(p.Recipe.Tool, src))
		}
		return nil
	}
	binaries := map[string]map[string]string{} // tool → binary → path
	for _, p := range plans {
		t := p.Recipe.Tool
		if binaries[t] == nil {
			binaries[t] = map[string]string{}
		}
		for _, b := range p.Recipe.binaries() {
			if _, ok := binaries[t][b]; ok {
				continue
			}
			if binaries[t][b], err = buildBinary(ctx, o, t, sources[t], b); err != nil {
				return err
			}
		}
	}

	tmp := strings.TrimSuffix(o.out, "/") + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	checksums := map[string]any{}
	var built []string
	lay, err := layout.Write(filepath.Join(tmp, "images"), empty.Index)
	if err != nil {
		return err
	}
	var imagesList []string
	for _, p := range plans {
		t, d, src := p.Recipe.Tool, p.Download, sources[p.Recipe.Tool]
		from := src.Version + " " + describe(t, src)
		if !d.IsImage() {
			rel := strings.TrimPrefix(d.URL, strings.TrimSuffix(filesRepo, "/")+"/")
			file := filepath.Join(tmp, "files", filepath.FromSlash(rel))
			sum, err := writeFile(file, p.Recipe, binaries[t], src.Version)
			if err != nil {
				return fmt.Errorf("%s: %w", d, err)
			}
			if p.Recipe.ChecksumTable != "" {
				checksums[p.Recipe.ChecksumTable] = testcluster.ChecksumTable{"amd64": {strings.TrimPrefix(src.Version, "v"): "sha256:" + sum}}
			} else {
				checksums[p.Recipe.ChecksumVar] = "sha256:" + sum
			}
			built = append(built, fmt.Sprintf("file  %-32s %-56s %s %s", d.Name, rel, size(file), from))
			continue
		}
		target := strings.TrimPrefix(d.Image, registry+"/")
		img, err := buildImage(o, p.Recipe, binaries[t], target)
		if err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		if err := lay.AppendImage(img, layout.WithAnnotations(map[string]string{ociimage.RefNameAnnotation: target})); err != nil {
			return err
		}
		imagesList = append(imagesList, "oci:"+filepath.Join(o.out, "images")+":"+target)
		built = append(built, fmt.Sprintf("image %-32s %-56s %s %s", d.Name, target, imageSize(img), from))
	}
	if err := writeJSON(filepath.Join(tmp, testcluster.ChecksumsFile), checksums); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(tmp, "downloads.json"), downloads); err != nil {
		return err
	}
	slices.Sort(built)
	report := fmt.Sprintf("# kubespray %s's downloads for the test cluster%s, built in %s\n%s\n", testcluster.KubesprayVersion,
		o.forVersion(), time.Since(start).Round(time.Second), strings.Join(built, "\n"))
	if err := os.WriteFile(filepath.Join(tmp, "built.txt"), []byte(report), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "images.list"), []byte(strings.Join(imagesList, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(o.out); err != nil {
		return err
	}
	if err := os.Rename(tmp, o.out); err != nil {
		return err
	}
	fmt.Fprint(os.Stderr, report)
	return nil
}

// list asks kubespray what it downloads for the test cluster: a master and a worker, its
// options, offline (so every download's place under the mirror is its place in the output), at
// kubeVersion (empty: kubespray's default).
// Every checksum a recipe gives is set to a placeholder: kubespray's tables lack some of the
// versions the test cluster takes (nerdctl 1.7.7), and the real ones are this build's output.
func list(ctx context.Context, kubesprayDir, kubeVersion string) (downloads []kubespraydownloads.Download, filesRepo, registry string, err error) {
	vars := testcluster.KubesprayVars()
	for _, r := range recipes {
		if r.ChecksumVar != "" {
			vars[r.ChecksumVar] = bpav1.ExtraVar("sha256:" + strings.Repeat("0", 64))
		}
	}
	p, hosts := testcluster.Offline(vars)
	mirror := &offline.Mirror{URL: "http://10.0.0.1:8080", KubesprayFiles: artifacts.Ref{Kind: artifacts.FileSet, Name: "kubespray", Version: testcluster.KubesprayVersion}}
	inventory, extraVars, err := renderinventory.Render(p, hosts, renderinventory.Options{Mirror: mirror, KubernetesVersion: kubeVersion})
	if err != nil {
		return nil, "", "", err
	}
	mv, err := mirror.KubesprayVars()
	if err != nil {
		return nil, "", "", err
	}
	downloads, err = kubespraydownloads.List(ctx, kubesprayDir, inventory, extraVars)
	return downloads, mv["files_repo"].(string), mv["registry_host"].(string), err
}

// A source is where one build takes a tool from: its module's folder under -tools and the
// version that folder's go.mod pins, or (Dir empty) a third-party archive's tag or pause's
// version.
type source struct {
	Dir     string
	Version string
}

// sourceOf is the source that makes a download at the version kubespray asks for: the tool's
// module folder that pins it (Dir, or one of Dir-* beside it), or the third-party archive of
// that tag, or pause at -pause-version; none is an error naming what is wanted and what there is.
// versionsOf keeps the module folders' versions between calls (go list takes a while).
func sourceOf(o options, p plan, filesRepo string, versionsOf map[string]string) (source, error) {
	t := tools[p.Recipe.Tool]
	switch {
	case p.Recipe.Tool == "pause":
		if !matches(p.Download, filesRepo, o.pauseVersion) {
			return source{}, fmt.Errorf("kubespray wants %s; pause is at %s (-pause-version)", p.Download, o.pauseVersion)
		}
		return source{Version: o.pauseVersion}, nil
	case t.Archive != "":
		for _, tag := range candidateTags(p.Download) {
			if _, err := os.Stat(archivePath(o, t, tag)); err == nil {
				return source{Version: tag}, nil
			}
		}
		return source{}, fmt.Errorf("kubespray wants %s: %s holds no %s-TAG.tar.gz of its version", p.Download, o.thirdParty, t.Archive)
	}
	dirs, err := moduleDirs(o, t)
	if err != nil {
		return source{}, err
	}
	var have []string
	for _, dir := range dirs {
		v, err := moduleVersion(o, dir, t.Module, versionsOf)
		if err != nil {
			return source{}, err
		}
		if matches(p.Download, filesRepo, v) {
			return source{Dir: dir, Version: v}, nil
		}
		have = append(have, dir+" at "+v)
	}
	return source{}, fmt.Errorf("kubespray wants %s; hack/tools/kubespray-downloads has %s: add a module at that version (%s-VERSION) or move the test cluster's options (internal/test/testcluster)",
		p.Download, strings.Join(have, ", "), t.Dir)
}

// moduleDirs are a module tool's folders under -tools: Dir, then Dir-* in name order.
func moduleDirs(o options, t tool) ([]string, error) {
	more, err := filepath.Glob(filepath.Join(o.tools, t.Dir+"-*", "go.mod"))
	if err != nil {
		return nil, err
	}
	dirs := []string{t.Dir}
	for _, m := range more {
		dirs = append(dirs, filepath.Base(filepath.Dir(m)))
	}
	slices.Sort(dirs[1:])
	return dirs, nil
}

// moduleVersion is the version of module that the tool folder dir's go.mod pins.
func moduleVersion(o options, dir, module string, cache map[string]string) (string, error) {
	if v, ok := cache[dir]; ok {
		return v, nil
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module)
	cmd.Dir = filepath.Join(o.tools, dir)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("the version of %s in %s: %w", module, cmd.Dir, err)
	}
	v := strings.TrimSpace(string(out))
	cache[dir] = v
	return v, nil
}

// candidateTags are the tags a download may be built from: an image's tag, or each vX.Y...
// element of a file's URL.
func candidateTags(d kubespraydownloads.Download) []string {
	if d.IsImage() {
		return []string{d.Image[strings.LastIndex(d.Image, ":")+1:]}
	}
	var out []string
	for _, part := range strings.Split(d.URL, "/") {
		if len(part) > 1 && part[0] == 'v' && part[1] >= '0' && part[1] <= '9' {
			out = append(out, part)
		}
	}
	return out
}

func archivePath(o options, t tool, tag string) string {
	return filepath.Join(o.thirdParty, t.Archive+"-"+tag+".tar.gz")
}

// describe says where a tool's binaries come from, for the report.
func describe(name string, src source) string {
	t := tools[name]
	switch {
	case name == "pause":
		return "Kubernetes' build/pause/linux/pause.c (gcc, static)"
	case t.Archive != "":
		return "third-party " + t.Archive + " archive"
	}
	return "module " + t.Module + " (hack/tools/kubespray-downloads/" + src.Dir + ")"
}

// buildBinary builds one binary of a tool at a version into the cache, unless it is there.
func buildBinary(ctx context.Context, o options, name string, from source, binary string) (string, error) {
	if name == "pause" {
		return o.pause, nil
	}
	t, version := tools[name], from.Version
	toolchain, err := toolchainOf(ctx, o, t, from.Dir)
	if err != nil {
		return "", err
	}
	key, err := buildKey(o, t, from.Dir, toolchain)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(o.cache, name+"-"+version+"-"+key)
	out := filepath.Join(dir, binary)
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(o.tools, from.Dir)
	mod := "-mod=readonly"
	if t.Archive != "" {
		var err error
		if src, err = extract(ctx, o, t, version); err != nil {
			return "", err
		}
		// Its own go.mod and go.sum pin it. -mod=mod lets the go command write what it
		// normalizes (flannel's CNI plugin says "go 1.23", which it rewrites "go 1.23.0");
		// a missing requirement would need a version listing, which the proxy refuses, so
		// nothing can drift in unpinned.
		mod = "-mod=mod"
		if _, err := os.Stat(filepath.Join(src, "vendor")); err == nil {
			mod = "-mod=vendor"
		}
	}
	ldflags := "-s -w " + strings.NewReplacer("VERSION", version, "MINOR", minor(version)).Replace(t.LDFlags)
	args := []string{"build", "-trimpath", mod}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0")
	if t.CGO {
		// Static, as upstream's releases are (Debian's libseccomp-dev has the static library
		// runc's seccomp links).
		env = append(env, "CGO_ENABLED=1")
		args = append(args, "-tags="+strings.Join(append([]string{"netgo", "osusergo"}, t.Tags...), " "))
		ldflags += ` -extldflags "-static"`
	}
	with := "this machine's Go"
	if toolchain != "" {
		// GOTOOLCHAIN names one exact Go: the go command fetches it from the module proxy
		// once and refuses to build when the module's go line asks for more.
		env = append(env, "GOTOOLCHAIN="+toolchain)
		with = toolchain + " (upstream's, " + t.GoVersionFile + ")"
	}
	args = append(args, "-ldflags="+ldflags, "-o", out+".tmp", t.Binaries[binary])
	say("building %s %s from %s with %s", binary, version, describe(name, from), with)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = src, env
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s %s: %w\n%s", binary, version, err, output)
	}
	if err := builtWith(out+".tmp", toolchain); err != nil {
		return "", fmt.Errorf("building %s %s: %w", binary, version, err)
	}
	say("built %s %s in %s", binary, version, time.Since(start).Round(time.Second))
	return out, os.Rename(out+".tmp", out)
}

// toolchainOf is the Go that builds tool t's binaries from its module folder dir: "" for the
// machine's, or, when upstream names its own (GoVersionFile), that one ("go1.24.5").
func toolchainOf(ctx context.Context, o options, t tool, dir string) (string, error) {
	if t.GoVersionFile == "" {
		return "", nil
	}
	// go mod download is the one go command that fetches a pinned module and says where it
	// is; go list -m says where only when it is already in the module cache.
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", t.Module)
	cmd.Dir = filepath.Join(o.tools, dir)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("the source of %s in %s: %w", t.Module, cmd.Dir, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("the source of %s in %s: go mod download said %q", t.Module, cmd.Dir, strings.TrimSpace(string(out)))
	}
	file := filepath.Join(m.Dir, t.GoVersionFile)
	content, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("the Go that builds %s: %w", t.Module, err)
	}
	toolchain, err := parseGoVersion(string(content))
	if err != nil {
		return "", fmt.Errorf("the Go that builds %s: %s: %w", t.Module, file, err)
	}
	return toolchain, nil
}

// goVersionPattern is a released Go, as a .go-version file names it: 1.24.5, or 1.25 for its
// first release. Nothing else reaches GOTOOLCHAIN.
var goVersionPattern = regexp.MustCompile(`^1\.[0-9]{1,3}(\.[0-9]{1,3})?$`)

// parseGoVersion reads a .go-version file: one released Go version on its line; it gives the
// toolchain's name ("go1.24.5").
func parseGoVersion(content string) (string, error) {
	v := strings.TrimSpace(content)
	if !goVersionPattern.MatchString(v) {
		return "", fmt.Errorf("want one released Go version such as 1.24.5, have %q", v)
	}
	return "go" + v, nil
}

// builtWith checks the Go that built binary: a build that ran with another Go than the one
// asked for (a go command that ignored GOTOOLCHAIN) fails rather than ship.
func builtWith(binary, toolchain string) error {
	if toolchain == "" {
		return nil
	}
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("the Go that built it: %w", err)
	}
	if info.GoVersion != toolchain {
		return fmt.Errorf("built with %s, not %s", info.GoVersion, toolchain)
	}
	return nil
}

// buildKey tells builds of one tool at one version apart by what else makes the binary: its
// pins (the go.mod and go.sum of the tool's module folder dir; a third-party archive is named
// by its version already) and the build's settings, the Go that builds it among them ("" for
// the machine's). A binary cached by version alone outlived a change of its build tags once
// (runc without seccomp).
func buildKey(o options, t tool, dir, toolchain string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "cgo=%v tags=%q ldflags=%q\n", t.CGO, t.Tags, t.LDFlags)
	if toolchain != "" {
		// Only then: the keys of the binaries the machine's Go builds stay what they were.
		fmt.Fprintf(h, "toolchain=%s\n", toolchain)
	}
	var inputs []string
	if t.Archive == "" {
		inputs = []string{filepath.Join(o.tools, dir, "go.mod"), filepath.Join(o.tools, dir, "go.sum")}
	}
	for _, f := range inputs {
		in, err := os.Open(f)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, in)
		_ = in.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

func minor(version string) string {
	parts := strings.Split(strings.TrimPrefix(version, "v"), ".")
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

// extract unpacks a third-party archive into the cache, once.
func extract(ctx context.Context, o options, t tool, tag string) (string, error) {
	dir := filepath.Join(o.cache, "src", t.Archive+"-"+tag)
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return dir, nil
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(parent, ".extract-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if out, err := exec.CommandContext(ctx, "tar", "-xzf", archivePath(o, t, tag), "-C", tmp).CombinedOutput(); err != nil {
		return "", fmt.Errorf("extracting %s: %w: %s", archivePath(o, t, tag), err, out)
	}
	// git archive --prefix=NAME-TAG/: the tree is the archive's one folder.
	if err := os.Rename(filepath.Join(tmp, t.Archive+"-"+tag), dir); err != nil {
		return "", fmt.Errorf("%s: want one folder %s-%s: %w", archivePath(o, t, tag), t.Archive, tag, err)
	}
	return dir, nil
}

// writeFile writes one file download as upstream's release asset is and returns its sha256.
func writeFile(file string, r recipe, binaries map[string]string, version string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", err
	}
	f, err := os.Create(file)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	w := io.MultiWriter(f, h)
	if r.Binary != "" {
		if err := copyFile(w, binaries[r.Binary]); err != nil {
			return "", err
		}
	} else if err := writeTarGz(w, r.Entries, binaries, version); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func copyFile(w io.Writer, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	_, err = io.Copy(w, in)
	return err
}

// writeTarGz writes the entries, in name order, as root's, 0755, dated the epoch: the same
// binaries give the same archive.
func writeTarGz(w io.Writer, entries, binaries map[string]string, version string) error {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	rename := strings.NewReplacer("VERSION", version, "ARCH", "amd64")
	dirs := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		entry := rename.Replace(name)
		if d := path.Dir(strings.TrimPrefix(entry, "./")); d != "." && !dirs[d] {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
				return err
			}
		}
		src := binaries[entries[name]]
		fi, err := os.Stat(src)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: entry, Mode: 0o755, Size: fi.Size(), ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		if err := copyFile(tw, src); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// buildImage is one image: the Debian base with the recipe's binaries, as root unless the
// recipe says otherwise (kubeadm's static pods read root's keys).
func buildImage(o options, r recipe, binaries map[string]string, ref string) (v1.Image, error) {
	var files []ociimage.File
	dirs := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(r.Image)) {
		for d := path.Dir(p); d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			files = append(files, ociimage.File{Path: d, Dir: true, Mode: 0o755})
		}
		data, err := os.ReadFile(binaries[r.Image[p]])
		if err != nil {
			return nil, err
		}
		files = append(files, ociimage.File{Path: p, Mode: 0o755, Data: data})
	}
	slices.SortFunc(files, func(a, b ociimage.File) int { return strings.Compare(a.Path, b.Path) })
	return ociimage.BuildRootFS(ociimage.RootFS{
		Ref: ref, Tarball: o.base, Files: files,
		Config: v1.Config{
			Entrypoint: r.Entrypoint,
			User:       r.User,
			Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		},
		Labels: map[string]string{"org.opencontainers.image.description": "built by hack/kubespray-downloads for the test cluster"},
	})
}

func writeJSON(file string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o644)
}

func size(file string) string {
	fi, err := os.Stat(file)
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%5.1f MiB", float64(fi.Size())/(1<<20))
}

func imageSize(img v1.Image) string {
	layers, err := img.Layers()
	if err != nil {
		return "?"
	}
	var total int64
	for _, l := range layers {
		s, err := l.Size()
		if err != nil {
			return "?"
		}
		total += s
	}
	return fmt.Sprintf("%5.1f MiB", float64(total)/(1<<20))
}
