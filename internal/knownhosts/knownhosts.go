// Package knownhosts keeps the nodes' pinned SSH host keys in their cluster's Secret
// "<cluster>-known-hosts": pin-host-keys pins them, the steps that log in check against them,
// fetch-kubeconfig forgets the removed nodes'.
package knownhosts

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Store pins host keys in the Secret "<cluster>-known-hosts", owned by the
// cluster's Provisioning (it goes with it): one key per node address, holding the node's public
// key in authorized_keys form; beside it, "<address>.host", the BareMetalHost the key was read
// from and when that host was last provisioned; and the key known_hosts, every pinned key in
// OpenSSH's known_hosts format (what run-kubespray mounts, so Ansible's ssh checks the nodes
// strictly). A public key is not a secret; a Secret keeps it beside the cluster's other
// credentials, under the same RBAC.
type Store struct {
	c         client.Client
	namespace string
	name      string
	cluster   string
	// owner is the Provisioning a Secret written by this store belongs to; nil for the steps
	// that only read pins.
	owner *bpav1.Provisioning
}

// For is the store of cluster's pins in namespace, for reading.
func For(c client.Client, namespace, cluster string) *Store {
	return &Store{c: c, namespace: namespace, name: cluster + bpav1.KnownHostsSecretSuffix, cluster: cluster}
}

// OwnedBy is the store writing for p: the Secret it writes belongs to p and goes with it.
func (s *Store) OwnedBy(p *bpav1.Provisioning) *Store {
	s.owner = p
	return s
}

// storeKey makes an address a valid Secret key: 10.0.0.1:22 → 10.0.0.1_22.
func storeKey(addr string) string {
	return strings.NewReplacer(":", "_", "[", "", "]", "").Replace(addr)
}

// HostKey is the Secret key recording which host an address's key was read from.
func HostKey(addr string) string { return storeKey(addr) + ".host" }

// Lookup is the key pinned for addr, if any: what sshexec checks a node against.
func (s *Store) Lookup(ctx context.Context, addr string) (ssh.PublicKey, bool, error) {
	sec, err := s.Read(ctx)
	if err != nil || sec == nil {
		return nil, false, err
	}
	return s.Parse(sec, addr)
}

// Where says where addr's key is pinned: the Secret's key to delete by hand for a node that
// was reinstalled.
func (s *Store) Where(addr string) string {
	return fmt.Sprintf("key %s of Secret %s/%s", storeKey(addr), s.namespace, s.name)
}

// Read returns the Secret, nil if there is none yet.
func (s *Store) Read(ctx context.Context) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.name}, sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Secret %s/%s: %w", s.namespace, s.name, err)
	}
	return sec, nil
}

// Parse is the key pinned for addr in the Secret, if any.
func (s *Store) Parse(sec *corev1.Secret, addr string) (ssh.PublicKey, bool, error) {
	raw, ok := sec.Data[storeKey(addr)]
	if !ok {
		return nil, false, nil
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey(raw)
	if err != nil {
		return nil, false, fmt.Errorf("key %s of Secret %s/%s is not a public key: %w", storeKey(addr), s.namespace, s.name, err)
	}
	return key, true, nil
}

// Pin is a key to record for an address.
type Pin struct {
	Key ssh.PublicKey
	// Host is the host the key was read from, as provisionedAs names it ("" when unknown).
	Host string
	// Replace lets the key take the place of another one pinned for the address: the host
	// behind it was provisioned again, or the address now belongs to another host.
	Replace bool
}

// ProvisionedAs names a BareMetalHost as it is provisioned now: namespace/name, and when its
// last provisioning started. Ironic writes a new operating system, and so new host keys, each
// time it provisions a host, and metal3 records each time in the host's operation history.
func ProvisionedAs(bmh *metal3v1alpha1.BareMetalHost) string {
	return bmh.Namespace + "/" + bmh.Name + "@" + bmh.Status.OperationHistory.Provision.Start.UTC().Format(time.RFC3339)
}

// update reads the Secret, lets change edit its data, and writes it when the data changed,
// owned by the store's Provisioning; it retries on conflicts, since steps on several nodes may
// write at once.
func (s *Store) update(ctx context.Context, change func(sec *corev1.Secret) error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sec, err := s.Read(ctx)
		if err != nil {
			return err
		}
		create := sec == nil
		if create {
			sec = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name, Labels: map[string]string{bpav1.ClusterLabel: s.cluster}}}
		}
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		before := sec.DeepCopy()
		if err := change(sec); err != nil {
			return err
		}
		if s.owner != nil {
			if err := controllerutil.SetOwnerReference(s.owner, sec, s.c.Scheme()); err != nil {
				return err
			}
		}
		switch {
		case create && len(sec.Data) == 0: // nothing to keep (an unpin with no pins)
			return nil
		case create:
			if err := s.c.Create(ctx, sec); apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("secrets"), s.name, err)
			} else {
				return err
			}
		case equality.Semantic.DeepEqual(before.Data, sec.Data) && equality.Semantic.DeepEqual(before.OwnerReferences, sec.OwnerReferences):
			return nil
		}
		return s.c.Update(ctx, sec)
	})
}

// PinAll records keys (address → pin) in one write. A key pinned meanwhile for the same
// address must be the one given, unless the pin replaces it. Keys pinned before known_hosts was
// kept (or edited by hand) are added there too.
func (s *Store) PinAll(ctx context.Context, pins map[string]Pin) error {
	addrs := slices.Sorted(maps.Keys(pins))
	return s.update(ctx, func(sec *corev1.Secret) error {
		for _, addr := range addrs {
			p := pins[addr]
			pinned, ok, perr := s.Parse(sec, addr)
			switch {
			case p.Replace || (!ok && perr == nil):
				sec.Data[storeKey(addr)] = ssh.MarshalAuthorizedKey(p.Key)
			case perr == nil && !sshexec.SameKey(pinned, p.Key):
				return &sshexec.HostKeyChangedError{Addr: addr, Want: ssh.FingerprintSHA256(pinned), Got: ssh.FingerprintSHA256(p.Key), Pin: s.Where(addr)}
			}
			if p.Host != "" {
				sec.Data[HostKey(addr)] = []byte(p.Host)
			}
			if err := addKnownHost(sec, addr, p.Key); err != nil {
				return err
			}
		}
		return nil
	})
}

// Unpin forgets the keys of addresses whose nodes have left the cluster: the address may be
// handed to another host, whose key is its own.
func (s *Store) Unpin(ctx context.Context, addrs []string) error {
	return s.update(ctx, func(sec *corev1.Secret) error {
		for _, addr := range addrs {
			delete(sec.Data, storeKey(addr))
			delete(sec.Data, HostKey(addr))
			removeKnownHost(sec, addr)
		}
		return nil
	})
}

// addKnownHost adds addr's key to the Secret's known_hosts, replacing an older line for addr;
// lines stay sorted, so the same keys always make the same file.
func addKnownHost(sec *corev1.Secret, addr string, key ssh.PublicKey) error {
	line, err := sshexec.KnownHostsLine(addr, key)
	if err != nil {
		return err
	}
	pattern, _ := sshexec.KnownHostsPattern(addr)
	setKnownHosts(sec, append(knownHostsWithout(sec, pattern), line))
	return nil
}

// removeKnownHost takes addr's line out of the Secret's known_hosts.
func removeKnownHost(sec *corev1.Secret, addr string) {
	if pattern, err := sshexec.KnownHostsPattern(addr); err == nil {
		setKnownHosts(sec, knownHostsWithout(sec, pattern))
	}
}

// knownHostsWithout is the Secret's known_hosts lines but those for pattern.
func knownHostsWithout(sec *corev1.Secret, pattern string) []string {
	return slices.DeleteFunc(strings.Split(strings.TrimSpace(string(sec.Data[steps.KnownHostsKey])), "\n"), func(l string) bool {
		p, _, _ := strings.Cut(l, " ")
		return l == "" || p == pattern
	})
}

func setKnownHosts(sec *corev1.Secret, lines []string) {
	slices.Sort(lines)
	if len(lines) == 0 {
		delete(sec.Data, steps.KnownHostsKey)
		return
	}
	sec.Data[steps.KnownHostsKey] = []byte(strings.Join(lines, "\n") + "\n")
}
