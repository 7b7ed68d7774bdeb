// Command image builds the project's OCI images without a Docker daemon (`make image`) and
// pushes them (`make image-push IMAGE_REGISTRY=host[:port][/path]`):
//
//	image build -o bin/images --controller bin/linux/bpa-workflow-controller --kubectl bin/k8s/kubectl --registry bin/k8s/registry
//	image push -i bin/images --registry 127.0.0.1:5000/bpa
//	image node -o bin/node-images.tar --layout bin/images --pause PAUSE --argoexec ARGOEXEC \
//	  --kubespray-rootfs ROOTFS.tar --kubespray-playbooks test/e2e/kubespray
//	image kubespray -o bin/kubespray-v2.30.0.tar --rootfs ROOTFS.tar --ref kubespray:v2.30.0
//
// `node` is test equipment (hack/node-images.sh): it writes every image the end-to-end suite's
// node runs as one archive for `ctr images import`: the project's two images from the layout,
// the pod sandbox (Kubernetes' pause), Argo's executor, and a kubespray stand-in (a Debian root
// filesystem with ansible-core and OpenSSH's client, the stand-in playbooks in /kubespray, as
// in kubespray's own image). `kubespray` is test equipment too (hack/kubespray-image.sh): the
// real kubespray's image, from hack/kubespray-rootfs.sh's root filesystem.
//
// The layout it writes holds three images, named in its index: the controller (manager,
// steps and file server), kubectl for the KUD plugin pods, and CNCF Distribution's registry,
// the site registry the chart deploys.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/akraino-edge-stack/bpa-workflow-controller/hack/internal/ociimage"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: image build|push|node|kubespray [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "push":
		err = push(os.Args[2:])
	case "node":
		err = node(os.Args[2:])
	case "kubespray":
		err = kubespray(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want build, push, node or kubespray", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(args []string) error {
	fl := flag.NewFlagSet("build", flag.ExitOnError)
	out := fl.String("o", "bin/images", "OCI image layout to write (replaced)")
	controller := fl.String("controller", "", "the bpa-workflow-controller binary, built for linux (required)")
	kubectl := fl.String("kubectl", "", "the kubectl binary (required)")
	controllerRef := fl.String("controller-ref", "bpa-workflow-controller:v0.1.0", "the controller image's name:tag")
	kubectlRef := fl.String("kubectl-ref", "bpa-kubectl:v1.33.13", "the kubectl image's name:tag")
	registry := fl.String("registry", "", "CNCF Distribution's registry binary, built for linux (required)")
	registryRef := fl.String("registry-ref", "bpa-registry:v3.0.0", "the registry image's name:tag")
	certs := fl.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "CA bundle the images trust (Debian's ca-certificates)")
	revision := fl.String("revision", "", "source revision, recorded as org.opencontainers.image.revision")
	_ = fl.Parse(args)
	if *controller == "" || *kubectl == "" || *registry == "" {
		return errors.New("build: --controller, --kubectl and --registry are required")
	}
	specs, err := ociimage.ProjectSpecs(ociimage.Inputs{
		ControllerBinary: *controller, KubectlBinary: *kubectl, RegistryBinary: *registry,
		ControllerRef: *controllerRef, KubectlRef: *kubectlRef, RegistryRef: *registryRef, Revision: *revision,
	})
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(*certs)
	if err != nil {
		return fmt.Errorf("CA certificates: %w (install Debian's ca-certificates)", err)
	}
	base := ociimage.Base(ca)
	images := make([]v1.Image, len(specs))
	for i, s := range specs {
		if images[i], err = ociimage.Build(s, base); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(*out); err != nil {
		return err
	}
	if _, err := ociimage.WriteLayout(*out, specs, images); err != nil {
		return err
	}
	for i, img := range images {
		d, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s\t%s\n", specs[i].Ref, d)
	}
	fmt.Printf("written: %s (OCI image layout)\n", *out)
	return nil
}

func push(args []string) error {
	fl := flag.NewFlagSet("push", flag.ExitOnError)
	in := fl.String("i", "bin/images", "OCI image layout to push")
	registry := fl.String("registry", "", "registry and optional path to push to, host[:port][/path] (required)")
	_ = fl.Parse(args)
	if *registry == "" {
		return errors.New("push: --registry is required (make image-push IMAGE_REGISTRY=host[:port][/path])")
	}
	pushed, err := ociimage.Push(*in, *registry)
	if err != nil {
		return err
	}
	for _, p := range pushed {
		fmt.Printf("%s@%s\n", p.Ref, p.Digest)
	}
	return nil
}
