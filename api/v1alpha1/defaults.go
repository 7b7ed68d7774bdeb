package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Defaults that the CRD schema cannot state because they depend on the cluster's name.
const (
	// DefaultSSHKeySecretSuffix: without spec.ssh.secretRef the key is in "<cluster>-ssh-key".
	DefaultSSHKeySecretSuffix = "-ssh-key"
	// DefaultSSHKeySecretKey is the key of a kubernetes.io/ssh-auth Secret.
	DefaultSSHKeySecretKey = "ssh-privatekey"
	// DefaultSSHUser logs in to the nodes.
	DefaultSSHUser = "root"
	// KubeconfigSecretSuffix: fetch-kubeconfig stores "<cluster>-kubeconfig" (key "value").
	KubeconfigSecretSuffix = "-kubeconfig" //nolint:gosec // G101: a Secret's name suffix, not a credential
	// KubeconfigSecretKey is the key Cluster API uses for a kubeconfig.
	KubeconfigSecretKey = "value"
	// KnownHostsSecretSuffix: the SSH steps pin the nodes' host keys in "<cluster>-known-hosts".
	KnownHostsSecretSuffix = "-known-hosts"
	// HostsConfigMapSuffix: fetch-kubeconfig stores "<cluster>-hosts" (label → IP, role).
	HostsConfigMapSuffix = "-hosts"
	// KubesprayFactsConfigMapSuffix: the controller keeps kubespray's facts of the cluster's
	// nodes between runs in "<cluster>-kubespray-facts" (one gzip'd entry per node).
	KubesprayFactsConfigMapSuffix = "-kubespray-facts"
)

// SSHKeyRef is the SSH key Secret steps mount, with defaults applied.
func (a *SSHAccess) SSHKeyRef(cluster string) SecretKeyReference {
	ref := SecretKeyReference{Name: cluster + DefaultSSHKeySecretSuffix, Key: DefaultSSHKeySecretKey}
	if a != nil && a.SecretRef != nil {
		ref.Name = a.SecretRef.Name
		if a.SecretRef.Key != "" {
			ref.Key = a.SecretRef.Key
		}
	}
	return ref
}

// LoginUser is the SSH user, with the default applied.
func (a *SSHAccess) LoginUser() string {
	if a == nil || a.User == "" {
		return DefaultSSHUser
	}
	return a.User
}

// HasEntry reports whether the spec names label under masters or workers.
func (s *ProvisioningSpec) HasEntry(label string) bool {
	for _, list := range [][]HostEntry{s.Masters, s.Workers} {
		for _, e := range list {
			if _, ok := e[label]; ok {
				return true
			}
		}
	}
	return false
}

// FirstMaster is the label of the first masters entry: the node fetch-kubeconfig reads the
// cluster's admin.conf from.
func (s *ProvisioningSpec) FirstMaster() string {
	if len(s.Masters) == 0 {
		return ""
	}
	for label := range s.Masters[0] {
		return label // an entry has exactly one key
	}
	return ""
}

// HostNamespaces are the namespaces discover-hosts takes BareMetalHosts from: the
// hostSelector's, or the Provisioning's own.
func (p *Provisioning) HostNamespaces() []string {
	if p.Spec.HostSelector != nil && len(p.Spec.HostSelector.Namespaces) > 0 {
		return p.Spec.HostSelector.Namespaces
	}
	return []string{p.Namespace}
}

// DefaultUpgradeSerial is kubespray's own serial: a fifth of the workers at a time.
const DefaultUpgradeSerial = "20%"

// WorkersPerWave is how many of that many workers one upgrade wave takes: serial as a count, or
// as a percentage rounded up, at least one (DefaultUpgradeSerial when unset).
func (u *UpgradePolicy) WorkersPerWave(workers int) (int, error) {
	serial := intstr.FromString(DefaultUpgradeSerial)
	if u != nil && u.Serial != nil {
		serial = *u.Serial
	}
	n := 0
	switch s := serial.String(); {
	case serial.Type == intstr.Int && serial.IntVal >= 1:
		n = int(serial.IntVal)
	case serialCountPattern.MatchString(s):
		n, _ = strconv.Atoi(s)
	case serialPercentPattern.MatchString(s):
		percent, _ := strconv.Atoi(strings.TrimSuffix(s, "%"))
		n = (workers*percent + 99) / 100
	default:
		return 0, fmt.Errorf("serial is a count of at least 1 or a percentage from 1%% to 100%%, not %q", s)
	}
	return max(1, min(n, workers)), nil
}

// UpgradeApprovalOf is the policy's approval, none when unset.
func (u *UpgradePolicy) UpgradeApprovalOf() UpgradeApproval {
	if u == nil || u.Approval == "" {
		return UpgradeApprovalNone
	}
	return u.Approval
}
