package steprun

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
)

// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;create;update;patch

// secretKeyStore pins host keys in the Secret "<cluster>-known-hosts": one key per node
// address, holding the node's public key in authorized_keys form. A public key is not a
// secret; a Secret keeps it beside the cluster's other credentials, under the same RBAC.
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
	sec := &corev1.Secret{}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.name}, sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("reading Secret %s/%s: %w", s.namespace, s.name, err)
	}
	raw, ok := sec.Data[storeKey(addr)]
	if !ok {
		return nil, false, nil
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey(raw)
	if err != nil {
		return nil, false, fmt.Errorf("Secret %s/%s key %s is not a public key: %w", s.namespace, s.name, storeKey(addr), err)
	}
	return key, true, nil
}

// Pin records a first-seen key. Steps on several nodes pin at once, so it retries on
// conflicts; a key pinned meanwhile for the same address must be this one.
func (s *secretKeyStore) Pin(ctx context.Context, addr string, key ssh.PublicKey) error {
	line := ssh.MarshalAuthorizedKey(key)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sec := &corev1.Secret{}
		err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.name}, sec)
		if apierrors.IsNotFound(err) {
			sec = &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name, Labels: map[string]string{bpav1.ClusterLabel: s.cluster}},
				Data:       map[string][]byte{storeKey(addr): line},
			}
			if err := s.c.Create(ctx, sec); apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("secrets"), s.name, err)
			} else {
				return err
			}
		}
		if err != nil {
			return err
		}
		if prev, ok := sec.Data[storeKey(addr)]; ok {
			pinned, _, _, _, perr := ssh.ParseAuthorizedKey(prev)
			if perr == nil && string(pinned.Marshal()) != string(key.Marshal()) {
				return &sshexec.HostKeyChangedError{Addr: addr, Want: ssh.FingerprintSHA256(pinned), Got: ssh.FingerprintSHA256(key)}
			}
			return nil
		}
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[storeKey(addr)] = line
		return s.c.Update(ctx, sec)
	})
}
