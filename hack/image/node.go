package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/hack/internal/ociimage"
)

// kubesprayConfig is the stand-in image's ansible.cfg: what of kubespray's own matters to a
// read-only root filesystem (facts cached under /tmp), to speed (pipelining), and to finding
// its roles from a playbook elsewhere (roles_path, relative to this file).
const kubesprayConfig = `[defaults]
roles_path = roles
gathering = smart
fact_caching = jsonfile
fact_caching_connection = /tmp
[ssh_connection]
pipelining = True
`

// kubesprayImageConfig is the configuration of kubespray's image, as its Dockerfile sets it, for
// the stand-in and the real one: root by default (the Workflow runs it as nobody), the
// playbooks in the working directory /kubespray, Python writing no bytecode.
var kubesprayImageConfig = v1.Config{
	WorkingDir: "/kubespray",
	Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"},
	Cmd:        []string{"/bin/bash"},
}

func node(args []string) error {
	fl := flag.NewFlagSet("node", flag.ExitOnError)
	out := fl.String("o", "bin/node-images.tar", "archive to write, for `ctr images import`")
	in := fl.String("layout", "bin/images", "the project's OCI image layout (make image)")
	pause := fl.String("pause", "", "Kubernetes' pause binary, static (required)")
	pauseRef := fl.String("pause-ref", "bpa-pause:3.10.1", "the pod sandbox image's name:tag")
	argoexec := fl.String("argoexec", "", "Argo's argoexec binary, static (required)")
	argoexecRef := fl.String("argoexec-ref", "argoexec:v3.7.18", "the executor image's name:tag")
	rootfs := fl.String("kubespray-rootfs", "", "Debian root filesystem tarball with ansible-core and openssh-client (required)")
	playbooks := fl.String("kubespray-playbooks", "test/e2e/kubespray", "the stand-in playbooks (*.yml)")
	kubesprayRef := fl.String("kubespray-ref", "kubespray-standin:v2.28.0", "the kubespray stand-in image's name:tag")
	certs := fl.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "CA bundle the images trust")
	_ = fl.Parse(args)
	if *pause == "" || *argoexec == "" || *rootfs == "" {
		return errors.New("node: --pause, --argoexec and --kubespray-rootfs are required")
	}
	images, err := ociimage.FromLayout(*in)
	if err != nil {
		return fmt.Errorf("the project's images (%s): %w (run `make image`)", *in, err)
	}
	ca, err := os.ReadFile(*certs)
	if err != nil {
		return err
	}
	base := ociimage.Base(ca)

	pauseFile, err := readFile(*pause, "/pause")
	if err != nil {
		return err
	}
	if images[*pauseRef], err = ociimage.Build(ociimage.Spec{Ref: *pauseRef, Files: []ociimage.File{pauseFile}, Entrypoint: []string{"/pause"}}, base); err != nil {
		return err
	}
	// Argo's init container runs `argoexec init`, found on PATH, and copies it into the pod's
	// /var/run/argo, from where the emissary runs each main container's command.
	exec, err := ociimage.BinaryFile(*argoexec, "argoexec")
	if err != nil {
		return err
	}
	if images[*argoexecRef], err = ociimage.Build(ociimage.Spec{Ref: *argoexecRef, Files: []ociimage.File{exec}, Entrypoint: []string{"/usr/local/bin/argoexec"}}, base); err != nil {
		return err
	}

	// Laid out as kubespray's tree: cluster.yml, scale.yml, remove-node.yml at the top,
	// playbooks/facts.yml, roles/kubespray_defaults below.
	var files []ociimage.File
	var books []string
	err = filepath.WalkDir(*playbooks, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(*playbooks, file)
		if d.IsDir() {
			files = append(files, ociimage.File{Path: path.Join("/kubespray", filepath.ToSlash(rel)), Mode: 0o755, Dir: true})
		} else if strings.HasSuffix(file, ".yml") {
			books = append(books, file)
		}
		return nil
	})
	if err != nil || len(books) == 0 {
		return fmt.Errorf("no playbooks in %s: %v", *playbooks, err)
	}
	files = append(files, ociimage.File{Path: "/kubespray/ansible.cfg", Mode: 0o644, Data: []byte(kubesprayConfig)})
	for _, b := range books {
		rel, _ := filepath.Rel(*playbooks, b)
		f, err := readFile(b, path.Join("/kubespray", filepath.ToSlash(rel)))
		if err != nil {
			return err
		}
		f.Mode = 0o644
		files = append(files, f)
	}
	if images[*kubesprayRef], err = ociimage.BuildRootFS(ociimage.RootFS{Ref: *kubesprayRef, Tarball: *rootfs, Files: files, Config: kubesprayImageConfig}); err != nil {
		return err
	}

	return writeArchive(*out, images)
}

// writeArchive writes images as one archive for `ctr images import`, and says what it holds.
func writeArchive(out string, images map[string]v1.Image) error {
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := ociimage.WriteArchive(f, images); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	for ref, img := range images {
		d, err := img.Digest()
		if err != nil {
			return err
		}
		full, _ := ociimage.ContainerdName(ref)
		fmt.Printf("%s\t%s\n", full, d)
	}
	fmt.Printf("written: %s (for ctr images import)\n", out)
	return nil
}

// kubespray writes kubespray's image, built from hack/kubespray-rootfs.sh's root filesystem,
// which holds everything (kubespray's own ansible.cfg and playbooks in /kubespray), configured
// as kubespray's Dockerfile configures its image.
func kubespray(args []string) error {
	fl := flag.NewFlagSet("kubespray", flag.ExitOnError)
	out := fl.String("o", "", "archive to write, for `ctr images import` (required)")
	rootfs := fl.String("rootfs", "", "hack/kubespray-rootfs.sh's tarball (required)")
	ref := fl.String("ref", "", "the image's name:tag, kubespray:vX.Y.Z (required)")
	_ = fl.Parse(args)
	if *out == "" || *rootfs == "" || *ref == "" {
		return errors.New("kubespray: -o, --rootfs and --ref are required")
	}
	img, err := ociimage.BuildRootFS(ociimage.RootFS{Ref: *ref, Tarball: *rootfs, Config: kubesprayImageConfig})
	if err != nil {
		return err
	}
	return writeArchive(*out, map[string]v1.Image{*ref: img})
}

func readFile(src, dst string) (ociimage.File, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return ociimage.File{}, err
	}
	return ociimage.File{Path: dst, Mode: 0o755, Data: data}, nil
}
