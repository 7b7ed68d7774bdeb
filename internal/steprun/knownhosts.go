package steprun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// secretKeyStore pins host keys in the Secret "<cluster>-known-hosts": one key per node
// address, holding the node's public key in authorized_keys form, and the key known_hosts,
// every pinned key in OpenSSH's known_hosts format (what run-kubespray mounts, so Ansible's
// ssh checks the nodes strictly). A public key is not a secret; a Secret keeps it beside the
// cluster's other credentials, under the same RBAC.
type secretKeyStore struct {
	c         client.Client
	namespace string
	name      string
	cluster   string
}

func knownHosts(c client.Client, namespace, cluster string) *secretKeyStore {
	return &secretKeyStore{c: c, namespace: namespace, name: cluster + bpav1.KnownHostsSecretSuffix, cluster: cluster}
}

// storeKey makes an address a valid Secret key: 10.0.0.1:22 → 10.0.0.1_22.
func storeKey(addr string) string {
	return strings.NewReplacer(":", "_", "[", "", "]", "").Replace(addr)
}

func (s *secretKeyStore) Lookup(ctx context.Context, addr string) (ssh.PublicKey, bool, error) {
	sec, err := s.read(ctx)
	if err != nil || sec == nil {
		return nil, false, err
	}
	return s.parse(sec, addr)
}

// read returns the Secret, nil if there is none yet.
func (s *secretKeyStore) read(ctx context.Context) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.name}, sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Secret %s/%s: %w", s.namespace, s.name, err)
	}
	return sec, nil
}

// parse is the key pinned for addr in the Secret, if any.
func (s *secretKeyStore) parse(sec *corev1.Secret, addr string) (ssh.PublicKey, bool, error) {
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

// Where says where addr's key is pinned: the Secret's key to delete by hand for a node that
// was reinstalled.
func (s *secretKeyStore) Where(addr string) string {
	return fmt.Sprintf("key %s of Secret %s/%s", storeKey(addr), s.namespace, s.name)
}

// pinAll records keys (address → key) in one write. Steps on several nodes pin at once, so it
// retries on conflicts; a key pinned meanwhile for the same address must be the one given.
// Keys pinned before known_hosts was kept (or edited by hand) are added there too.
func (s *secretKeyStore) pinAll(ctx context.Context, keys map[string]ssh.PublicKey) error {
	addrs := slices.Sorted(maps.Keys(keys))
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sec, err := s.read(ctx)
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
		for _, addr := range addrs {
			key := keys[addr]
			pinned, ok, perr := s.parse(sec, addr)
			switch {
			case !ok && perr == nil:
				sec.Data[storeKey(addr)] = ssh.MarshalAuthorizedKey(key)
			case perr == nil && !sshexec.SameKey(pinned, key):
				return &sshexec.HostKeyChangedError{Addr: addr, Want: ssh.FingerprintSHA256(pinned), Got: ssh.FingerprintSHA256(key), Pin: s.Where(addr)}
			}
			if err := addKnownHost(sec, addr, key); err != nil {
				return err
			}
		}
		switch {
		case create:
			if err := s.c.Create(ctx, sec); apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("secrets"), s.name, err)
			} else {
				return err
			}
		case equality.Semantic.DeepEqual(before.Data, sec.Data):
			return nil
		}
		return s.c.Update(ctx, sec)
	})
}

// addKnownHost adds addr's key to the Secret's known_hosts, replacing an older line for addr;
// lines stay sorted, so the same keys always make the same file.
func addKnownHost(sec *corev1.Secret, addr string, key ssh.PublicKey) error {
	line, err := sshexec.KnownHostsLine(addr, key)
	if err != nil {
		return err
	}
	pattern, _, _ := strings.Cut(line, " ")
	lines := slices.DeleteFunc(strings.Split(strings.TrimSpace(string(sec.Data[steps.KnownHostsKey])), "\n"), func(l string) bool {
		p, _, _ := strings.Cut(l, " ")
		return l == "" || p == pattern
	})
	lines = append(lines, line)
	slices.Sort(lines)
	sec.Data[steps.KnownHostsKey] = []byte(strings.Join(lines, "\n") + "\n")
	return nil
}

// PinHostKeys records every addressed node's host key in "<cluster>-known-hosts" before
// kubespray connects to any node: first contact pins it; a key pinned earlier must match, or
// the step fails, finally, naming the node and both fingerprints. A node that does not answer
// is waited for (retryable), unless its key is pinned already (a node a remove run takes out
// may be down for good; kubespray still checks it against the pin). The Secret is read once
// and written once, however many nodes.
func PinHostKeys(ctx context.Context, c client.Client, ref CRRef, hosts []placement.Placement, port int, timeout time.Duration) error {
	p := &bpav1.Provisioning{}
	if err := get(ctx, c, ref, p, "Provisioning"); err != nil {
		return err
	}
	store := knownHosts(c, p.Namespace, p.Labels[bpav1.ClusterLabel])
	sec, err := store.read(ctx)
	if err != nil {
		return steps.Retryable(err)
	}
	if sec == nil {
		sec = &corev1.Secret{}
	}
	seen := map[string]ssh.PublicKey{}
	nodeOf := map[string]string{}
	// Every node is tried, and every failure named: the final ones (no address, a changed key)
	// make the step fail at once, the others (a node not answering yet) make it wait.
	var final, waiting []error
	for _, h := range hosts {
		if net.ParseIP(h.IP) == nil {
			final = append(final, fmt.Errorf("node %q has no IP address (%q)", h.Label, h.IP))
			continue
		}
		addr := net.JoinHostPort(h.IP, strconv.Itoa(port))
		nodeOf[addr] = h.Label
		pinned, ok, err := store.parse(sec, addr)
		if err != nil {
			final = append(final, err)
			continue
		}
		key, err := sshexec.ScanHostKey(ctx, addr, pinned, timeout)
		switch {
		case err != nil && ok:
			continue
		case err != nil:
			waiting = append(waiting, fmt.Errorf("node %q: %w", h.Label, err))
			continue
		case ok && !sshexec.SameKey(pinned, key):
			final = append(final, fmt.Errorf("node %q: %w", h.Label, &sshexec.HostKeyChangedError{Addr: addr, Want: ssh.FingerprintSHA256(pinned), Got: ssh.FingerprintSHA256(key), Pin: store.Where(addr)}))
			continue
		}
		seen[addr] = key
	}
	switch {
	case len(final) > 0:
		return errors.Join(append(final, waiting...)...)
	case len(waiting) > 0:
		return steps.Retryable(errors.Join(waiting...))
	}
	if err := store.pinAll(ctx, seen); err != nil {
		var changed *sshexec.HostKeyChangedError
		if errors.As(err, &changed) { // pinned by another step meanwhile
			return fmt.Errorf("node %q: %w", nodeOf[changed.Addr], err)
		}
		return steps.Retryable(fmt.Errorf("pinning the nodes' host keys: %w", err))
	}
	return nil
}
