package testregistry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/registrygate"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testinterrupt"
)

// Secure is a registry as a site runs it: TLS with its own CA, and every request
// authenticated against an htpasswd file.
type Secure struct {
	Addr string
	// CAFile is the PEM CA the registry's certificate chains to; CAs the same as a pool.
	CAFile string
	CAs    *x509.CertPool
	// Username and Password are the one account.
	Username, Password string
	// Storage is the registry's filesystem storage (tests corrupt blobs there).
	Storage string
}

// StartSecure runs a registry with TLS (a CA made for the test, a certificate for 127.0.0.1)
// and htpasswd authentication until the test ends.
func StartSecure(t testing.TB) *Secure {
	t.Helper()
	return StartSecureFor(t)
}

// StartSecureFor is StartSecure with a certificate valid for more addresses too: those a
// relay to the loopback registry listens on (a node's, in a network namespace).
func StartSecureFor(t testing.TB, ips ...string) *Secure {
	t.Helper()
	s, dir := newSecure(t, ips)
	extra := fmt.Sprintf(`  tls:
    certificate: %s
    key: %s
auth:
  htpasswd:
    realm: bpa-site
    path: %s
`, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "htpasswd"))
	s.Addr = start(t, dir, extra, "https", func(c *http.Client) {
		c.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.CAs, MinVersion: tls.VersionTLS12}}
	})
	return s
}

// StartBounded is a site registry as the chart deploys it: Distribution with htpasswd on
// loopback over plain HTTP, behind the gate (registrygate) that holds the TLS certificate and
// refuses uploads over maxUpload bytes. Addr is the gate's.
func StartBounded(t testing.TB, maxUpload int64) *Secure {
	t.Helper()
	s, dir := newSecure(t, nil)
	upstream := start(t, dir, fmt.Sprintf(`auth:
  htpasswd:
    realm: bpa-site
    path: %s
`, filepath.Join(dir, "htpasswd")), "http")
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	gate := &registrygate.Gate{Upstream: &url.URL{Scheme: "http", Host: upstream}, MaxUpload: maxUpload}
	srv := &http.Server{Handler: gate.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.Addr = l.Addr().String()
	return s
}

// newSecure makes the account, the CA and the certificate of a secure registry in a new
// directory.
func newSecure(t testing.TB, ips []string) (*Secure, string) {
	t.Helper()
	dir := testinterrupt.TempDir(t)
	caPEM, certPEM, keyPEM, err := selfSignedChain(ips)
	if err != nil {
		t.Fatal(err)
	}
	s := &Secure{Username: "uploader", Password: "site-secret-" + fmt.Sprint(time.Now().UnixNano()), Storage: filepath.Join(dir, "storage")}
	hash, err := bcrypt.GenerateFromPassword([]byte(s.Password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	s.CAFile = filepath.Join(dir, "ca.pem")
	for name, data := range map[string][]byte{
		"ca.pem": caPEM, "tls.crt": certPEM, "tls.key": keyPEM,
		"htpasswd": []byte(s.Username + ":" + string(hash) + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.CAs = x509.NewCertPool()
	s.CAs.AppendCertsFromPEM(caPEM)
	return s, dir
}

// selfSignedChain makes a CA and a server certificate for 127.0.0.1 (and ips) signed by it.
func selfSignedChain(ips []string) (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bpa test registry CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, ip := range ips {
		leaf.IPAddresses = append(leaf.IPAddresses, net.ParseIP(ip))
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
