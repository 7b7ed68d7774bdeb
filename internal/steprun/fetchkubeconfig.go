package steprun

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// DefaultAdminConf is where kubespray leaves the cluster's admin kubeconfig on the masters.
const DefaultAdminConf = "/etc/kubernetes/admin.conf"

// SSHOptions say how a step reaches the nodes.
type SSHOptions struct {
	// KeyFile is the mounted private key.
	KeyFile string
	// Port of sshd on the nodes.
	Port int
	// Timeout bounds connecting and the handshake.
	Timeout time.Duration
}

// KubeconfigRun is what the Workflow says of the run fetch-kubeconfig finishes, compiled from
// the generation it ran: the step runs after kubespray has changed the cluster, so it follows
// the Workflow, not a spec that may have moved on since.
type KubeconfigRun struct {
	// Master is the label of the first masters entry: the node admin.conf is read from.
	Master string
	// User logs in to it.
	User string
	// Leaving are the nodes the run removed: not in ConfigMap "<cluster>-hosts" any more.
	Leaving []string
}

// FetchKubeconfig reads admin.conf from the first master over SSH (through sudo when the user
// is not root), points every cluster in it at that master's IP, and stores it in Secret
// "<cluster>-kubeconfig" (key "value"); it also writes ConfigMap "<cluster>-hosts" (label →
// IP and role) for the Software Workflows. Both are owned by the Provisioning. After a remove
// run it unpins the removed nodes' host keys. The kubeconfig never reaches a log, an error or
// an output.
func FetchKubeconfig(ctx context.Context, c client.Client, ref CRRef, run KubeconfigRun, hosts []placement.Placement, adminConf string, opts SSHOptions) error {
	p := &bpav1.Provisioning{}
	if err := getIncarnation(ctx, c, ref, p, "Provisioning"); err != nil {
		return err
	}
	cluster := p.Labels[bpav1.ClusterLabel]
	master, err := placedMaster(run.Master, hosts)
	if err != nil {
		return err
	}
	signer, err := sshexec.LoadSigner(opts.KeyFile)
	if err != nil {
		return err
	}
	user := run.User
	cfg := sshexec.Config{User: user, Signer: signer, Keys: knownHosts(c, p.Namespace, cluster), Timeout: opts.Timeout}
	addr := net.JoinHostPort(master.IP, strconv.Itoa(opts.Port))
	node, err := sshexec.Dial(ctx, cfg, addr)
	if err != nil {
		return retryableUnlessHostKey(fmt.Errorf("master %q: %w", master.Label, err))
	}
	defer node.Close()
	words := []string{"cat", "--", adminConf}
	if user != bpav1.DefaultSSHUser {
		words = sshexec.Privileged(nil, words...)
	}
	command, err := sshexec.Quote(words...)
	if err != nil {
		return err
	}
	raw, err := node.Run(ctx, command)
	if err != nil {
		return fmt.Errorf("reading %s on master %q (%s): %w", adminConf, master.Label, master.IP, err)
	}
	kubeconfig, err := pointAt(raw, master.IP)
	if err != nil {
		return fmt.Errorf("%s on master %q: %w", adminConf, master.Label, err)
	}
	if err := writeKubeconfig(ctx, c, p, cluster, kubeconfig); err != nil {
		return err
	}
	if err := writeHosts(ctx, c, p, cluster, hosts, run.Leaving); err != nil {
		return err
	}
	return unpinLeaving(ctx, c, p, cluster, hosts, run.Leaving, opts.Port)
}

// unpinLeaving forgets the pinned host keys of the nodes the run removed: their addresses may
// go to other hosts, and their hosts may come back reinstalled.
func unpinLeaving(ctx context.Context, c client.Client, p *bpav1.Provisioning, cluster string, hosts []placement.Placement, leaving []string, port int) error {
	var addrs []string
	for _, h := range hosts {
		if slices.Contains(leaving, h.Label) && h.IP != "" {
			addrs = append(addrs, net.JoinHostPort(h.IP, strconv.Itoa(port)))
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	store := knownHosts(c, p.Namespace, cluster)
	store.owner = p
	if err := store.unpin(ctx, addrs); err != nil {
		return steps.Retryable(fmt.Errorf("unpinning the host keys of the removed nodes: %w", err))
	}
	return nil
}

// placedMaster is the placed host of the master labelled label; it must have an IP.
func placedMaster(label string, hosts []placement.Placement) (placement.Placement, error) {
	i := slices.IndexFunc(hosts, func(h placement.Placement) bool { return h.Label == label })
	if i < 0 {
		return placement.Placement{}, fmt.Errorf("the first master %q is not among the placed hosts", label)
	}
	if net.ParseIP(hosts[i].IP) == nil {
		return placement.Placement{}, fmt.Errorf("the first master %q has no IP address (%q)", label, hosts[i].IP)
	}
	return hosts[i], nil
}

// pointAt parses a kubeconfig and points every cluster's server at ip, keeping the port.
func pointAt(raw []byte, ip string) ([]byte, error) {
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		// The parser's message may quote the file: say only that it is not a kubeconfig.
		return nil, fmt.Errorf("not a kubeconfig")
	}
	return leastKubeconfig(cfg, ip)
}

// leastKubeconfig keeps of a node's admin.conf only what reaches the new cluster: its current
// context's cluster CA, pointed at the master's address, and its user's client certificate
// and key, or token, all inline, and the name the API server's certificate is checked against
// when it is not the address. Everything else a node could put there is dropped or refused:
// other contexts, clusters and users; exec plugins and auth providers (commands the
// kubeconfig's users would run); files named instead of inlined (they would be read on the
// user's machine); a proxy, skipped TLS verification, impersonation, basic auth and
// extensions.
func leastKubeconfig(cfg *clientcmdapi.Config, ip string) ([]byte, error) {
	ctxName := cfg.CurrentContext
	if ctxName == "" && len(cfg.Contexts) == 1 {
		for name := range cfg.Contexts {
			ctxName = name
		}
	}
	kctx, ok := cfg.Contexts[ctxName]
	if !ok {
		return nil, fmt.Errorf("a kubeconfig without a current context")
	}
	cl, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("context %q names no cluster of the kubeconfig", ctxName)
	}
	user, ok := cfg.AuthInfos[kctx.AuthInfo]
	if !ok {
		return nil, fmt.Errorf("context %q names no user of the kubeconfig", ctxName)
	}
	switch {
	case len(cl.CertificateAuthorityData) == 0:
		return nil, fmt.Errorf("cluster %q: no inline certificate-authority-data (a kubeconfig that skips TLS verification, or names a CA file, is refused)", kctx.Cluster)
	case user.Exec != nil || user.AuthProvider != nil:
		return nil, fmt.Errorf("user %q: runs a command or an auth provider for credentials; an admin.conf holds them inline", kctx.AuthInfo)
	case len(user.ClientCertificateData) > 0 != (len(user.ClientKeyData) > 0):
		return nil, fmt.Errorf("user %q: a client certificate needs its key, inline", kctx.AuthInfo)
	case len(user.ClientCertificateData) == 0 && user.Token == "":
		return nil, fmt.Errorf("user %q: no inline client certificate or token", kctx.AuthInfo)
	}
	if _, err := x509.ParseCertificate(firstPEM(cl.CertificateAuthorityData)); err != nil {
		return nil, fmt.Errorf("cluster %q: certificate-authority-data is not a PEM certificate", kctx.Cluster)
	}
	if len(user.ClientCertificateData) > 0 {
		if _, err := tls.X509KeyPair(user.ClientCertificateData, user.ClientKeyData); err != nil {
			return nil, fmt.Errorf("user %q: the client certificate and key are not a pair", kctx.AuthInfo)
		}
	}
	port := "6443"
	if u, err := url.Parse(cl.Server); err == nil && u.Port() != "" {
		if n, err := strconv.Atoi(u.Port()); err == nil && n > 0 && n < 65536 {
			port = u.Port()
		}
	}
	serverName := cl.TLSServerName
	if serverName != "" && len(validation.IsDNS1123Subdomain(serverName)) > 0 {
		return nil, fmt.Errorf("cluster %q: tls-server-name is not a DNS name", kctx.Cluster)
	}
	const name = "cluster"
	out := clientcmdapi.NewConfig()
	out.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + net.JoinHostPort(ip, port), CertificateAuthorityData: cl.CertificateAuthorityData, TLSServerName: serverName}
	out.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: user.ClientCertificateData, ClientKeyData: user.ClientKeyData, Token: user.Token}
	out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	out.CurrentContext = name
	return clientcmd.Write(*out)
}

// firstPEM is the DER of the first PEM block of data (nil when there is none).
func firstPEM(data []byte) []byte {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil
	}
	return block.Bytes
}

func ownedBy(p *bpav1.Provisioning, obj metav1.Object, c client.Client) error {
	return controllerutil.SetOwnerReference(p, obj, c.Scheme())
}

func writeKubeconfig(ctx context.Context, c client.Client, p *bpav1.Provisioning, cluster string, kubeconfig []byte) error {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: cluster + bpav1.KubeconfigSecretSuffix}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, sec, func() error {
		if sec.Labels == nil {
			sec.Labels = map[string]string{}
		}
		sec.Labels[bpav1.ClusterLabel] = cluster
		sec.Data = map[string][]byte{bpav1.KubeconfigSecretKey: kubeconfig}
		return ownedBy(p, sec, c)
	})
	if err != nil {
		return steps.Retryable(fmt.Errorf("writing Secret %s/%s: %w", sec.Namespace, sec.Name, err))
	}
	return nil
}

// ClusterNode is one entry of ConfigMap "<cluster>-hosts".
type ClusterNode struct {
	IP   string `json:"ip"`
	Role string `json:"role"`
}

func writeHosts(ctx context.Context, c client.Client, p *bpav1.Provisioning, cluster string, hosts []placement.Placement, leaving []string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: cluster + bpav1.HostsConfigMapSuffix}}
	data := map[string]string{}
	for _, h := range hosts {
		if slices.Contains(leaving, h.Label) {
			continue // a node the run removed
		}
		raw, err := json.Marshal(ClusterNode{IP: h.IP, Role: h.Role})
		if err != nil {
			return err
		}
		data[h.Label] = string(raw)
	}
	_, err := controllerutil.CreateOrUpdate(ctx, c, cm, func() error {
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[bpav1.ClusterLabel] = cluster
		cm.Data = data
		return ownedBy(p, cm, c)
	})
	if err != nil {
		return steps.Retryable(fmt.Errorf("writing ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err))
	}
	return nil
}

// retryableUnlessHostKey: a node that does not answer yet is worth waiting for; a changed
// host key, or one never pinned, is not.
func retryableUnlessHostKey(err error) error {
	var changed *sshexec.HostKeyChangedError
	var unpinned *sshexec.NotPinnedError
	if errors.As(err, &changed) || errors.As(err, &unpinned) {
		return err
	}
	return steps.Retryable(err)
}
