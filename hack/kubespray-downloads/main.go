// Command kubespray-downloads builds everything kubespray downloads for the test cluster, here,
// without a download from anywhere but the Go module proxy: its files (kubeadm, kubelet,
// kubectl, etcd, containerd, runc, nerdctl, crictl, the CNI plugins), laid out as kubespray's
// files_repo serves them, and its images (the control plane's, kube-proxy, pause, CoreDNS,
// flannel and flannel's CNI plugin), in an OCI image layout.
//
//	go run ./hack/kubespray-downloads -kubespray DIR -third-party DIR -base ROOTFS.tar \
//	  -pause PAUSE -pause-version 3.10.1 -cache DIR -o OUT [-kube-version 1.33.4]
//
// One build is for one Kubernetes version, kubespray's default unless -kube-version names
// another (the version an upgrade test starts from); two builds' outputs together serve an
// upgrade from one to the other (testcluster.Vars merges their checksums).
//
// What to build is not a list kept here: kubespray's own download role says it
// (kubespraydownloads.List, for the test cluster's options: internal/test/testcluster), and every
// download must have a recipe (recipes.go) whose tool is at the version kubespray asks for, or
// the build fails saying which. Tools are the modules of hack/tools/kubespray-downloads, each
// pinned by its go.mod and go.sum, and the sources of the third-party folder. The built
// binaries are cached by tool and version under -cache. OUT holds:
//
//	files/          kubespray's files, by their path under files_repo (upload file-set)
//	images/         the images, an OCI image layout, each named by its path:tag
//	images.list     `upload images --from` of that layout
//	checksums.json  kubespray's checksum variable of each file, or for kubeadm, kubelet and
//	                kubectl its checksum table (kubeadm_checksums: amd64: VERSION): typed extra
//	                variables
//	downloads.json  what kubespray asked for
//	built.txt       what was built from where, with sizes
//
// hack/kubespray-downloads.sh runs it, with the images' root filesystem and pause, and caches
// OUT by everything that decides it.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"syscall"
)

type options struct {
	kubespray, thirdParty, base, pause, pauseVersion, cache, out, tools string
	// kubeVersion is the Kubernetes version the build is for; empty, kubespray's default.
	kubeVersion string
	// planOnly prints what would be built, from where, and stops.
	planOnly bool
}

func main() {
	var o options
	flag.StringVar(&o.kubespray, "kubespray", "", "kubespray's tree, at the release whose downloads are built (required)")
	flag.StringVar(&o.thirdParty, "third-party", "", "the folder of third-party source archives: crictl's, flannel's CNI plugin's (required)")
	flag.StringVar(&o.base, "base", "", "the images' root filesystem, an uncompressed tar (required)")
	flag.StringVar(&o.pause, "pause", "", "Kubernetes' pause, built (required)")
	flag.StringVar(&o.pauseVersion, "pause-version", "", "pause's version (required)")
	flag.StringVar(&o.cache, "cache", "", "where built binaries are kept, by tool and version (required)")
	flag.StringVar(&o.out, "o", "", "the folder to write (replaced) (required)")
	flag.StringVar(&o.tools, "tools", "hack/tools/kubespray-downloads", "the tools' modules")
	flag.StringVar(&o.kubeVersion, "kube-version", "", "the Kubernetes version to build for (kube_version, \"1.33.4\"); empty: the kubespray release's default")
	flag.BoolVar(&o.planOnly, "plan", false, "print what kubespray downloads and what would build each, and stop (only -kubespray, -third-party and -pause-version are needed)")
	flag.Parse()
	required := map[string]string{"kubespray": o.kubespray, "third-party": o.thirdParty, "pause-version": o.pauseVersion}
	if !o.planOnly {
		maps.Copy(required, map[string]string{"base": o.base, "pause": o.pause, "cache": o.cache, "o": o.out})
	}
	for name, v := range required {
		if v == "" {
			fmt.Fprintf(os.Stderr, "kubespray-downloads: -%s is required\n", name)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "kubespray-downloads:", err)
		os.Exit(1)
	}
}

// forVersion is " at VERSION" for a build of a named Kubernetes version, for messages.
func (o options) forVersion() string {
	if o.kubeVersion == "" {
		return ""
	}
	return " at Kubernetes " + o.kubeVersion
}
