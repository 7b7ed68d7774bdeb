package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubespraydownloads"
)

// A tool is where binaries come from: a module of hack/tools/kubespray-downloads (pinned by its
// go.mod and go.sum, its version that of Module there; a tool wanted at more than one version,
// Kubernetes for an upgrade's two, has a module per version: Dir, and Dir-VERSION beside it,
// the one whose version kubespray asks for building), or a source archive of the third-party
// folder (ARCHIVE-TAG.tar.gz, its version the TAG the download asks for), or Kubernetes' pause,
// built by hack/node-images.sh.
type tool struct {
	Dir    string // hack/tools/kubespray-downloads/Dir
	Module string // the module whose version is the tool's
	// Archive is the third-party archive's name before -TAG.tar.gz; its tree is built with its
	// own go.mod (and vendor/ when it has one).
	Archive string
	// Binaries: binary name → package.
	Binaries map[string]string
	// CGO builds with cgo, statically linked, as upstream does (runc's nsenter and flannel's UDP
	// backend are C).
	CGO bool
	// LDFlags are the version stamps upstream's own build sets, VERSION replaced.
	LDFlags string
	// Tags are build tags upstream's own build sets, besides the static build's.
	Tags []string
	// GoVersionFile is the file of Module's source that names the Go upstream builds its
	// release with (Kubernetes' .go-version); the binaries are built with that Go, not the
	// machine's. A newer Go can break a release it never built: Go's URL parser refuses a
	// bracketed IPv4 address from Go 1.24.8 and 1.25.2 on, and kubeadm 1.33.4's proxy
	// preflight writes one, so 1.33.4 built with Go 1.26 cannot run `kubeadm init`.
	GoVersionFile string
}

const kubeVersionFlags = "-X k8s.io/component-base/version.gitVersion=VERSION -X k8s.io/component-base/version.gitMajor=1 " +
	"-X k8s.io/component-base/version.gitMinor=MINOR -X k8s.io/component-base/version.gitTreeState=clean"

var tools = map[string]tool{
	"kubernetes": {Dir: "kubernetes", Module: "k8s.io/kubernetes", LDFlags: kubeVersionFlags, GoVersionFile: ".go-version", Binaries: map[string]string{
		"kubeadm": "k8s.io/kubernetes/cmd/kubeadm", "kubelet": "k8s.io/kubernetes/cmd/kubelet", "kubectl": "k8s.io/kubernetes/cmd/kubectl",
		"kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver", "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
		"kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler", "kube-proxy": "k8s.io/kubernetes/cmd/kube-proxy",
	}},
	"etcd": {Dir: "etcd", Module: "go.etcd.io/etcd/server/v3", Binaries: map[string]string{
		"etcd": "go.etcd.io/etcd/server/v3", "etcdctl": "go.etcd.io/etcd/etcdctl/v3", "etcdutl": "go.etcd.io/etcd/etcdutl/v3",
	}},
	"containerd": {Dir: "containerd", Module: "github.com/containerd/containerd/v2", LDFlags: "-X github.com/containerd/containerd/v2/version.Version=VERSION", Binaries: map[string]string{
		"containerd": "github.com/containerd/containerd/v2/cmd/containerd", "containerd-shim-runc-v2": "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
		"ctr": "github.com/containerd/containerd/v2/cmd/ctr",
	}},
	// runc with seccomp, as upstream's release: containerd gives every pod sandbox the runtime's
	// default seccomp profile, which a runc without it refuses ("seccomp not supported", found by
	// make e2e-cluster: no static pod of kubeadm's started).
	"runc": {Dir: "runc", Module: "github.com/opencontainers/runc", CGO: true, Tags: []string{"seccomp"}, LDFlags: "-X main.version=VERSION",
		Binaries: map[string]string{"runc": "github.com/opencontainers/runc"}},
	"nerdctl":            {Dir: "nerdctl", Module: "github.com/containerd/nerdctl", LDFlags: "-X github.com/containerd/nerdctl/pkg/version.Version=VERSION", Binaries: map[string]string{"nerdctl": "github.com/containerd/nerdctl/cmd/nerdctl"}},
	"cni-plugins":        {Dir: "cni-plugins", Module: "github.com/containernetworking/plugins", LDFlags: "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=VERSION", Binaries: cniPlugins()},
	"coredns":            {Dir: "coredns", Module: "github.com/coredns/coredns", Binaries: map[string]string{"coredns": "github.com/coredns/coredns"}},
	"flannel":            {Dir: "flannel", Module: "github.com/flannel-io/flannel", CGO: true, LDFlags: "-X github.com/flannel-io/flannel/pkg/version.Version=VERSION", Binaries: map[string]string{"flanneld": "github.com/flannel-io/flannel"}},
	"cri-tools":          {Archive: "cri-tools", LDFlags: "-X sigs.k8s.io/cri-tools/pkg/version.Version=VERSION", Binaries: map[string]string{"crictl": "./cmd/crictl"}},
	"flannel-cni-plugin": {Archive: "flannel-cni-plugin", LDFlags: "-X main.Version=VERSION -X main.Program=flannel", Binaries: map[string]string{"flannel": "."}},
	"pause":              {},
}

// cniPlugins are the plugins of the CNI plugins' release tarball, by their folder in the module.
func cniPlugins() map[string]string {
	out := map[string]string{}
	for _, p := range []string{"ipam/dhcp", "ipam/host-local", "ipam/static", "main/bridge", "main/dummy", "main/host-device", "main/ipvlan",
		"main/loopback", "main/macvlan", "main/ptp", "main/tap", "main/vlan", "meta/bandwidth", "meta/firewall", "meta/portmap",
		"meta/sbr", "meta/tuning", "meta/vrf"} {
		out[p[strings.Index(p, "/")+1:]] = "github.com/containernetworking/plugins/plugins/" + p
	}
	return out
}

// A recipe makes one of kubespray's downloads from a tool's binaries: a file laid out as
// upstream's release asset is (a bare binary, or a tar.gz whose entries are PATH → binary),
// or an image whose root filesystem is the images' Debian base with the binaries at PATH.
type recipe struct {
	Tool string
	// File: its entries (empty: the one binary, bare) and kubespray's variable for its checksum.
	Binary      string
	Entries     map[string]string // tar path → binary; VERSION and ARCH replaced
	ChecksumVar string
	// ChecksumTable, for a file whose version follows the cluster's Kubernetes version, is
	// kubespray's own table that ChecksumVar is looked up in (kubeadm_checksums[arch][version]):
	// its checksum is given as that table, so that the builds of two Kubernetes versions give
	// kubespray both (an upgrade fetches the second) and one variable cannot hold the wrong one.
	ChecksumTable string
	// Image: its files (path → binary) and how it runs.
	Image      map[string]string
	Entrypoint []string
	User       string
}

func (r recipe) isImage() bool { return r.Image != nil }

// recipes are by kubespray's download name (its downloads' keys, and kubeadm_COMPONENT for the
// control plane's images: kubespraydownloads.Download.Name).
var recipes = map[string]recipe{
	"kubeadm": {Tool: "kubernetes", Binary: "kubeadm", ChecksumVar: "kubeadm_binary_checksum", ChecksumTable: "kubeadm_checksums"},
	"kubelet": {Tool: "kubernetes", Binary: "kubelet", ChecksumVar: "kubelet_binary_checksum", ChecksumTable: "kubelet_checksums"},
	"kubectl": {Tool: "kubernetes", Binary: "kubectl", ChecksumVar: "kubectl_binary_checksum", ChecksumTable: "kubectl_checksums"},
	"etcd": {Tool: "etcd", ChecksumVar: "etcd_binary_checksum", Entries: map[string]string{
		"etcd-VERSION-linux-ARCH/etcd": "etcd", "etcd-VERSION-linux-ARCH/etcdctl": "etcdctl", "etcd-VERSION-linux-ARCH/etcdutl": "etcdutl",
	}},
	"cni":    {Tool: "cni-plugins", ChecksumVar: "cni_binary_checksum", Entries: entriesOf(cniPlugins(), "./")},
	"crictl": {Tool: "cri-tools", ChecksumVar: "crictl_binary_checksum", Entries: map[string]string{"crictl": "crictl"}},
	"runc":   {Tool: "runc", Binary: "runc", ChecksumVar: "runc_binary_checksum"},
	"containerd": {Tool: "containerd", ChecksumVar: "containerd_archive_checksum", Entries: map[string]string{
		"bin/containerd": "containerd", "bin/containerd-shim-runc-v2": "containerd-shim-runc-v2", "bin/ctr": "ctr",
	}},
	"nerdctl": {Tool: "nerdctl", ChecksumVar: "nerdctl_archive_checksum", Entries: map[string]string{"nerdctl": "nerdctl"}},

	// The images: kubeadm's static pods and kube-proxy's DaemonSet name their command without a
	// path (PATH finds /usr/local/bin); kubespray's manifests name theirs with one.
	"pod_infra":                       {Tool: "pause", Image: map[string]string{"/pause": "pause"}, Entrypoint: []string{"/pause"}, User: "65535:65535"},
	"coredns":                         {Tool: "coredns", Image: map[string]string{"/coredns": "coredns"}, Entrypoint: []string{"/coredns"}},
	"flannel":                         {Tool: "flannel", Image: map[string]string{"/opt/bin/flanneld": "flanneld"}, Entrypoint: []string{"/opt/bin/flanneld"}},
	"flannel_init":                    {Tool: "flannel-cni-plugin", Image: map[string]string{"/flannel": "flannel"}},
	"kubeadm_kube-apiserver":          controlPlaneImage("kube-apiserver"),
	"kubeadm_kube-controller-manager": controlPlaneImage("kube-controller-manager"),
	"kubeadm_kube-scheduler":          controlPlaneImage("kube-scheduler"),
	"kubeadm_kube-proxy":              controlPlaneImage("kube-proxy"),
}

func controlPlaneImage(binary string) recipe {
	return recipe{Tool: "kubernetes", Image: map[string]string{"/usr/local/bin/" + binary: binary}, Entrypoint: []string{"/usr/local/bin/" + binary}}
}

func entriesOf(binaries map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for b := range binaries {
		out[prefix+b] = b
	}
	return out
}

// binaries are the tool binaries a recipe needs.
func (r recipe) binaries() []string {
	var out []string
	if r.Binary != "" {
		out = append(out, r.Binary)
	}
	for _, m := range []map[string]string{r.Entries, r.Image} {
		for _, b := range m {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// matches says whether a tool at version makes the download: the image's tag is the version,
// or an element of the file's path under files_repo names it ("v1.34.3", "etcd-v3.5.21-...",
// "runc.amd64" under "v1.3.4"), with or without its v.
func matches(d kubespraydownloads.Download, filesRepo, version string) bool {
	bare := strings.TrimPrefix(version, "v")
	if d.IsImage() {
		tag := d.Image[strings.LastIndex(d.Image, ":")+1:]
		return strings.TrimPrefix(tag, "v") == bare
	}
	rel := strings.TrimPrefix(d.URL, strings.TrimSuffix(filesRepo, "/")+"/")
	for _, part := range strings.FieldsFunc(rel, func(r rune) bool { return r == '/' || r == '-' || r == '_' }) {
		part = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(part, ".tar.gz"), ".tgz"), ".amd64")
		if strings.TrimPrefix(part, "v") == bare {
			return true
		}
	}
	return false
}

// plan is what one build makes: every download with its recipe.
type plan struct {
	Download kubespraydownloads.Download
	Recipe   recipe
}

// planFor pairs kubespray's downloads with their recipes; a download no recipe makes is an
// error naming it, so a kubespray release or an option that fetches something new is never
// silently left out of the mirror.
func planFor(downloads []kubespraydownloads.Download) ([]plan, error) {
	var out []plan
	var unknown []string
	for _, d := range downloads {
		r, ok := recipes[d.Name]
		if !ok || r.isImage() != d.IsImage() {
			unknown = append(unknown, d.String())
			continue
		}
		out = append(out, plan{Download: d, Recipe: r})
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("kubespray downloads what hack/kubespray-downloads has no recipe for: %s", strings.Join(unknown, "; "))
	}
	return out, nil
}
