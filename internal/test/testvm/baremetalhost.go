package testvm

import (
	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BareMetalHost describes the machine as metal3 would once it has inspected and provisioned
// it: its boot MAC, its NIC (virtio, named as Debian's kernel names it in slot 3 of QEMU's PCI bus: ens3), its
// CPU count and RAM, provisioned and powered on. The BMC address is QEMU's, which no Ironic
// drives: metal3's own provisioning of the machines is out of scope.
func (m *Machine) BareMetalHost(namespace string) metal3v1alpha1.BareMetalHost {
	return metal3v1alpha1.BareMetalHost{
		TypeMeta:   metav1.TypeMeta{APIVersion: metal3v1alpha1.GroupVersion.String(), Kind: "BareMetalHost"},
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: namespace},
		Spec: metal3v1alpha1.BareMetalHostSpec{
			Online:         true,
			BootMACAddress: m.MAC,
			BMC:            metal3v1alpha1.BMCDetails{Address: "qemu://" + m.Name, CredentialsName: m.Name + "-bmc-secret"},
		},
		Status: metal3v1alpha1.BareMetalHostStatus{
			OperationalStatus: metal3v1alpha1.OperationalStatusOK,
			PoweredOn:         true,
			Provisioning: metal3v1alpha1.ProvisionStatus{
				State: metal3v1alpha1.StateProvisioned,
			},
			OperationHistory: metal3v1alpha1.OperationHistory{
				Provision: metal3v1alpha1.OperationMetric{Start: metav1.NewTime(m.Booted.UTC().Truncate(1e9)), End: metav1.NewTime(m.Booted.UTC().Truncate(1e9))},
			},
			HardwareDetails: &metal3v1alpha1.HardwareDetails{
				Hostname:     m.Name,
				RAMMebibytes: m.MemoryMiB,
				NIC:          []metal3v1alpha1.NIC{{Name: "ens3", Model: "0x1af4 0x1000", MAC: m.MAC, IP: m.IP, PXE: true}},
				CPU:          metal3v1alpha1.CPU{Arch: "x86_64", Model: "QEMU TCG CPU (max)", Count: m.CPUs},
				Storage:      []metal3v1alpha1.Storage{{Name: "/dev/vda", SizeBytes: 3 << 30, Rotational: false}},
			},
		},
	}
}
