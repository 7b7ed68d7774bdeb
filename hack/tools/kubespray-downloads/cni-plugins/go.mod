// The CNI plugins of the test cluster's cni-plugins tarball (hack/kubespray-downloads), every
// plugin upstream's release carries, at kubespray v2.30.0's default, in a module of its own.
module github.com/akraino-edge-stack/bpa-workflow-controller/hack/tools/kubespray-downloads/cni-plugins

go 1.25.7

tool (
	github.com/containernetworking/plugins/plugins/ipam/dhcp
	github.com/containernetworking/plugins/plugins/ipam/host-local
	github.com/containernetworking/plugins/plugins/ipam/static
	github.com/containernetworking/plugins/plugins/main/bridge
	github.com/containernetworking/plugins/plugins/main/dummy
	github.com/containernetworking/plugins/plugins/main/host-device
	github.com/containernetworking/plugins/plugins/main/ipvlan
	github.com/containernetworking/plugins/plugins/main/loopback
	github.com/containernetworking/plugins/plugins/main/macvlan
	github.com/containernetworking/plugins/plugins/main/ptp
	github.com/containernetworking/plugins/plugins/main/tap
	github.com/containernetworking/plugins/plugins/main/vlan
	github.com/containernetworking/plugins/plugins/meta/bandwidth
	github.com/containernetworking/plugins/plugins/meta/firewall
	github.com/containernetworking/plugins/plugins/meta/portmap
	github.com/containernetworking/plugins/plugins/meta/sbr
	github.com/containernetworking/plugins/plugins/meta/tuning
	github.com/containernetworking/plugins/plugins/meta/vrf
)

require (
	github.com/alexflint/go-filemutex v1.3.0 // indirect
	github.com/containernetworking/cni v1.3.0 // indirect
	github.com/containernetworking/plugins v1.8.0 // indirect
	github.com/coreos/go-iptables v0.8.0 // indirect
	github.com/coreos/go-systemd/v22 v22.6.0 // indirect
	github.com/godbus/dbus/v5 v5.1.0 // indirect
	github.com/insomniacslk/dhcp v0.0.0-20240829085014-a3a4c1f04475 // indirect
	github.com/josharian/native v1.1.0 // indirect
	github.com/mattn/go-shellwords v1.0.12 // indirect
	github.com/mdlayher/packet v1.1.2 // indirect
	github.com/mdlayher/socket v0.5.1 // indirect
	github.com/networkplumbing/go-nft v0.4.0 // indirect
	github.com/opencontainers/selinux v1.12.0 // indirect
	github.com/pierrec/lz4/v4 v4.1.21 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/safchain/ethtool v0.6.2 // indirect
	github.com/u-root/uio v0.0.0-20240224005618-d2acac8f3701 // indirect
	github.com/vishvananda/netlink v1.3.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	golang.org/x/net v0.43.0 // indirect
	golang.org/x/sync v0.16.0 // indirect
	golang.org/x/sys v0.35.0 // indirect
	sigs.k8s.io/knftables v0.0.18 // indirect
)
