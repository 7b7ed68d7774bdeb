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

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
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

// secretKeyStore pins host keys in the Secret "<cluster>-known-hosts", owned by the
// cluster's Provisioning (it goes with it): one key per node address, holding the node's public
// key in authorized_keys form; beside it, "<address>.host", the BareMetalHost the key was read
// from and when that host was last provisioned; and the key known_hosts, every pinned key in
// OpenSSH's known_hosts format (what run-kubespray mounts, so Ansible's ssh checks the nodes
// strictly). A public key is not a secret; a Secret keeps it beside the cluster's other
// credentials, under the same RBAC.
type secretKeyStore struct {
	c         client.Client
	namespace string
	name      string
	cluster   string
	// owner is the Provisioning a Secret written by this store belongs to; nil for the steps
	// that only read pins.
	owner *bpav1.Provisioning
}

func knownHosts(c client.Client, namespace, cluster string) *secretKeyStore {
	return &secretKeyStore{c: c, namespace: namespace, name: cluster + bpav1.KnownHostsSecretSuffix, cluster: cluster}
}

// storeKey makes an address a valid Secret key: 10.0.0.1:22 → 10.0.0.1_22.
func storeKey(addr string) string {
	return strings.NewReplacer(":", "_", "[", "", "]", "").Replace(addr)
}

// hostKey is the Secret key recording which host an address's key was read from.
func hostKey(addr string) string { return storeKey(addr) + ".host" }

func (s *secretKeyStore) Lookup(ctx context.Context, addr string) (ssh.PublicKey, bool, error) {
	sec, err := s.read(ctx)
	if err != nil || sec == nil {
		return nil, false, err
	}
	return s.parse(sec, addr)
}

// Where says where addr's key is pinned: the Secret's key to delete by hand for a node that
// was reinstalled.
func (s *secretKeyStore) Where(addr string) string {
	return fmt.Sprintf("key %s of Secret %s/%s", storeKey(addr), s.namespace, s.name)
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

// pin is a key to record for an address.
type pin struct {
	key ssh.PublicKey
	// host is the host the key was read from, as provisionedAs names it ("" when unknown).
	host string
	// replace lets the key take the place of another one pinned for the address: the host
	// behind it was provisioned again, or the address now belongs to another host.
	replace bool
}

// provisionedAs names a BareMetalHost as it is provisioned now: namespace/name, and when its
// last provisioning started. Ironic writes a new operating system, and so new host keys, each
// time it provisions a host, and metal3 records each time in the host's operation history.
func provisionedAs(bmh *metal3v1alpha1.BareMetalHost) string {
	return bmh.Namespace + "/" + bmh.Name + "@" + bmh.Status.OperationHistory.Provision.Start.UTC().Format(time.RFC3339)
}

// update reads the Secret, lets change edit its data, and writes it when the data changed,
// owned by the store's Provisioning; it retries on conflicts, since steps on several nodes may
// write at once.
func (s *secretKeyStore) update(ctx context.Context, change func(sec *corev1.Secret) error) error {
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
		if err := change(sec); err != nil {
			return err
		}
		if s.owner != nil {
			if err := ownedBy(s.owner, sec, s.c); err != nil {
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

// pinAll records keys (address → pin) in one write. A key pinned meanwhile for the same
// address must be the one given, unless the pin replaces it. Keys pinned before known_hosts was
// kept (or edited by hand) are added there too.
func (s *secretKeyStore) pinAll(ctx context.Context, pins map[string]pin) error {
	addrs := slices.Sorted(maps.Keys(pins))
	return s.update(ctx, func(sec *corev1.Secret) error {
		for _, addr := range addrs {
			p := pins[addr]
			pinned, ok, perr := s.parse(sec, addr)
			switch {
			case p.replace || (!ok && perr == nil):
				sec.Data[storeKey(addr)] = ssh.MarshalAuthorizedKey(p.key)
			case perr == nil && !sshexec.SameKey(pinned, p.key):
				return &sshexec.HostKeyChangedError{Addr: addr, Want: ssh.FingerprintSHA256(pinned), Got: ssh.FingerprintSHA256(p.key), Pin: s.Where(addr)}
			}
			if p.host != "" {
				sec.Data[hostKey(addr)] = []byte(p.host)
			}
			if err := addKnownHost(sec, addr, p.key); err != nil {
				return err
			}
		}
		return nil
	})
}

// unpin forgets the keys of addresses whose nodes have left the cluster: the address may be
// handed to another host, whose key is its own.
func (s *secretKeyStore) unpin(ctx context.Context, addrs []string) error {
	return s.update(ctx, func(sec *corev1.Secret) error {
		for _, addr := range addrs {
			delete(sec.Data, storeKey(addr))
			delete(sec.Data, hostKey(addr))
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

// PinHostKeys records every addressed node's host key in "<cluster>-known-hosts" before
// kubespray connects to any node: first contact pins it; a key pinned earlier must match, or
// the step fails, finally, naming the node, both fingerprints and the pin to delete. A key that
// changed because its host changed is pinned afresh, and an Event on the Provisioning says so:
// the BareMetalHost was provisioned again since (metal3's operation history), or the address
// now belongs to another BareMetalHost than the one it was pinned for. A node that does not
// answer is waited for (retryable), unless its key is pinned already (a node a remove run
// takes out may be down for good; kubespray still checks it against the pin). The Secret is
// read once and written once, however many nodes; it is owned by the Provisioning.
func PinHostKeys(ctx context.Context, c client.Client, ref CRRef, hosts []placement.Placement, port int, timeout time.Duration) error {
	p := &bpav1.Provisioning{}
	if err := get(ctx, c, ref, p, "Provisioning"); err != nil {
		return err
	}
	store := knownHosts(c, p.Namespace, p.Labels[bpav1.ClusterLabel])
	store.owner = p
	sec, err := store.read(ctx)
	if err != nil {
		return steps.Retryable(err)
	}
	if sec == nil {
		sec = &corev1.Secret{}
	}
	pins := map[string]pin{}
	nodeOf := map[string]string{}
	var repinned []string
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
		}
		now := hostNow(ctx, c, h.BareMetalHost)
		if ok && !sshexec.SameKey(pinned, key) {
			was := string(sec.Data[hostKey(addr)])
			if now == "" || was == "" || was == now {
				final = append(final, fmt.Errorf("node %q: %w", h.Label, &sshexec.HostKeyChangedError{Addr: addr, Want: ssh.FingerprintSHA256(pinned), Got: ssh.FingerprintSHA256(key), Pin: store.Where(addr)}))
				continue
			}
			pins[addr] = pin{key: key, host: now, replace: true}
			repinned = append(repinned, fmt.Sprintf("node %q (%s): pinned its new host key %s, since %s", h.Label, addr, ssh.FingerprintSHA256(key), hostChange(was, now)))
			continue
		}
		pins[addr] = pin{key: key, host: now}
	}
	if err := steps.Classified(final, waiting); err != nil {
		return err
	}
	if err := store.pinAll(ctx, pins); err != nil {
		var changed *sshexec.HostKeyChangedError
		if errors.As(err, &changed) { // pinned by another step meanwhile
			return fmt.Errorf("node %q: %w", nodeOf[changed.Addr], err)
		}
		return steps.Retryable(fmt.Errorf("pinning the nodes' host keys: %w", err))
	}
	for _, msg := range repinned {
		// The Event is what an operator sees; a failure to write it loses no pin.
		_ = recordEvent(ctx, c, p, corev1.EventTypeNormal, bpav1.EventHostKeyRepinned, msg)
	}
	return nil
}

// hostNow names the BareMetalHost ns/name as provisionedAs does, "" when it cannot be read.
func hostNow(ctx context.Context, c client.Reader, name string) string {
	ns, n, ok := strings.Cut(name, "/")
	bmh := &metal3v1alpha1.BareMetalHost{}
	if !ok || c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, bmh) != nil {
		return ""
	}
	return provisionedAs(bmh)
}

// hostChange says how the host behind an address changed between two provisionedAs names.
func hostChange(was, now string) string {
	wasHost, _, _ := strings.Cut(was, "@")
	nowHost, at, _ := strings.Cut(now, "@")
	if wasHost != nowHost {
		return fmt.Sprintf("the address was pinned for BareMetalHost %s and now belongs to %s", wasHost, nowHost)
	}
	return fmt.Sprintf("BareMetalHost %s was provisioned again (at %s) since its key was pinned", nowHost, at)
}

// recordEvent writes an Event about the Provisioning, as the step's own record of what it did.
func recordEvent(ctx context.Context, c client.Client, p *bpav1.Provisioning, kind, reason, msg string) error {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, GenerateName: p.Name + "."},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: bpav1.GroupVersion.String(), Kind: "Provisioning", Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion,
		},
		Reason: reason, Message: msg, Type: kind, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "bpa-pin-host-keys"},
	}
	return c.Create(ctx, ev)
}
