package pod

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/knownhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Run records every addressed node's host key in "<cluster>-known-hosts" before
// kubespray connects to any node: first contact pins it; a key pinned earlier must match, or
// the step fails, finally, naming the node, both fingerprints and the pin to delete. A key that
// changed because its host changed is pinned afresh, and an Event on the Provisioning says so:
// the BareMetalHost was provisioned again since (metal3's operation history), or the address
// now belongs to another BareMetalHost than the one it was pinned for. A node that does not
// answer is waited for (retryable), naming it, unless the run can do without it (mayNotAnswer:
// a node a remove run takes out may be down for good) and its key is pinned already. A silent
// node whose key was pinned, a node that answered before, is also told in a Warning Event. The
// Secret is read once and written once, however many nodes; it is owned by the Provisioning.
//
// The nodes the run goes on without are written to silentOutput (JSON, pinhostkeys.ParseSilent),
// each also told in a Warning Event.
func Run(ctx context.Context, c client.Client, ref stepcmd.CRRef, hosts []bpav1.Node, mayNotAnswer []string, port int, timeout time.Duration, silentOutput string) error {
	p := &bpav1.Provisioning{}
	if err := stepcmd.Get(ctx, c, ref, p, "Provisioning"); err != nil {
		return err
	}
	store := knownhosts.For(c, p.Namespace, p.Labels[bpav1.ClusterLabel]).OwnedBy(p)
	sec, err := store.Read(ctx)
	if err != nil {
		return steps.Retryable(err)
	}
	if sec == nil {
		sec = &corev1.Secret{}
	}
	r := &pinning{c: c, store: store, sec: sec, mayNotAnswer: mayNotAnswer, port: port, timeout: timeout,
		pins: map[string]knownhosts.Pin{}, nodeOf: map[string]string{}}
	for _, h := range hosts {
		r.try(ctx, h)
	}
	for _, msg := range r.silent {
		// The Event is what an operator sees beside the status; a failure to write it changes
		// nothing of the wait.
		_ = stepcmd.RecordEvent(ctx, c, p, "bpa-"+pinhostkeys.Name, corev1.EventTypeWarning, bpav1.EventNodeNotAnswering, msg)
	}
	if err := steps.Classified(r.final, r.waiting); err != nil {
		return err
	}
	if err := store.PinAll(ctx, r.pins); err != nil {
		var changed *sshexec.HostKeyChangedError
		if errors.As(err, &changed) { // pinned by another step meanwhile
			return fmt.Errorf("node %q: %w", r.nodeOf[changed.Addr], err)
		}
		return steps.Retryable(fmt.Errorf("pinning the nodes' host keys: %w", err))
	}
	for _, msg := range r.repinned {
		// The Event is what an operator sees; a failure to write it loses no pin.
		_ = stepcmd.RecordEvent(ctx, c, p, "bpa-"+pinhostkeys.Name, corev1.EventTypeNormal, bpav1.EventHostKeyRepinned, msg)
	}
	return writeSilent(silentOutput, r.wentOnWithout)
}

// writeSilent writes the nodes the run goes on without, [] for none.
func writeSilent(path string, silent []bpav1.SilentNode) error {
	if path == "" {
		return nil
	}
	if silent == nil {
		silent = []bpav1.SilentNode{}
	}
	return stepcmd.WriteJSON(io.Discard, path, silent)
}

// pinning is one run of the step over the nodes: what it will pin and what it found wrong.
// Every node is tried, and every failure named: the final ones (no address, a changed key)
// make the step fail at once, the others (a node not answering yet) make it wait.
type pinning struct {
	c            client.Reader
	store        *knownhosts.Store
	sec          *corev1.Secret
	mayNotAnswer []string
	port         int
	timeout      time.Duration

	pins             map[string]knownhosts.Pin
	nodeOf           map[string]string // address → node, for a pin another step wrote meanwhile
	repinned, silent []string          // the Events' messages
	final, waiting   []error
	wentOnWithout    []bpav1.SilentNode
}

// try reads h's host key and decides what becomes of it.
func (r *pinning) try(ctx context.Context, h bpav1.Node) {
	if net.ParseIP(h.IP) == nil {
		r.final = append(r.final, fmt.Errorf("node %q has no IP address (%q)", h.Label, h.IP))
		return
	}
	addr := net.JoinHostPort(h.IP, strconv.Itoa(r.port))
	r.nodeOf[addr] = h.Label
	pinned, ok, err := r.store.Parse(r.sec, addr)
	if err != nil {
		r.final = append(r.final, err)
		return
	}
	key, err := sshexec.ScanHostKey(ctx, addr, pinned, r.timeout)
	switch {
	case err != nil && ok && slices.Contains(r.mayNotAnswer, h.Label):
		now := time.Now()
		r.wentOnWithout = append(r.wentOnWithout, bpav1.SilentNode{Node: h.Label, Address: addr, TriedAt: metav1.NewTime(now.UTC().Truncate(time.Second))})
		r.silent = append(r.silent, notAnswering(h, addr, now, err, "the run goes on without it"))
		return
	case err != nil:
		msg := notAnswering(h, addr, time.Now(), err, "the run waits for it before touching any host: power it on, or take it out of the spec")
		r.waiting = append(r.waiting, errors.New(msg))
		if ok {
			r.silent = append(r.silent, msg)
		}
		return
	}
	now := hostNow(ctx, r.c, h.BareMetalHost)
	if !ok || sshexec.SameKey(pinned, key) {
		r.pins[addr] = knownhosts.Pin{Key: key, Host: now}
		return
	}
	was := string(r.sec.Data[knownhosts.HostKey(addr)])
	if now == "" || was == "" || was == now {
		r.final = append(r.final, fmt.Errorf("node %q: %w", h.Label, &sshexec.HostKeyChangedError{Addr: addr, Want: ssh.FingerprintSHA256(pinned), Got: ssh.FingerprintSHA256(key), Pin: r.store.Where(addr)}))
		return
	}
	r.pins[addr] = knownhosts.Pin{Key: key, Host: now, Replace: true}
	r.repinned = append(r.repinned, fmt.Sprintf("node %q (%s): pinned its new host key %s, since %s", h.Label, addr, ssh.FingerprintSHA256(key), hostChange(was, now)))
}

// notAnswering says which node is silent, since when, and what the run does about it.
func notAnswering(h bpav1.Node, addr string, at time.Time, err error, then string) string {
	return fmt.Sprintf("node %q (%s, BareMetalHost %s) does not answer SSH, tried at %s: %v; %s",
		h.Label, addr, h.BareMetalHost, at.UTC().Format(time.RFC3339), err, then)
}

// hostNow names the BareMetalHost ns/name as knownhosts.ProvisionedAs does, "" when it cannot be read.
func hostNow(ctx context.Context, c client.Reader, name string) string {
	ns, n, ok := strings.Cut(name, "/")
	bmh := &metal3v1alpha1.BareMetalHost{}
	if !ok || c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, bmh) != nil {
		return ""
	}
	return knownhosts.ProvisionedAs(bmh)
}

// hostChange says how the host behind an address changed between two knownhosts.ProvisionedAs names.
func hostChange(was, now string) string {
	wasHost, _, _ := strings.Cut(was, "@")
	nowHost, at, _ := strings.Cut(now, "@")
	if wasHost != nowHost {
		return fmt.Sprintf("the address was pinned for BareMetalHost %s and now belongs to %s", wasHost, nowHost)
	}
	return fmt.Sprintf("BareMetalHost %s was provisioned again (at %s) since its key was pinned", nowHost, at)
}
