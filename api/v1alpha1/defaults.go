package v1alpha1

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
