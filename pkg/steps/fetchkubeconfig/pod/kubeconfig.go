package pod

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// DefaultAdminConf is where kubespray leaves the cluster's admin kubeconfig on the masters.
const DefaultAdminConf = "/etc/kubernetes/admin.conf"

// placedMaster is the placed host of the master labelled label; it must have an IP.
func placedMaster(label string, hosts []bpav1.Node) (bpav1.Node, error) {
	i := slices.IndexFunc(hosts, func(h bpav1.Node) bool { return h.Label == label })
	if i < 0 {
		return bpav1.Node{}, fmt.Errorf("the first master %q is not among the placed hosts", label)
	}
	if net.ParseIP(hosts[i].IP) == nil {
		return bpav1.Node{}, fmt.Errorf("the first master %q has no IP address (%q)", label, hosts[i].IP)
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
