// Command guestwork is the work a master's control plane does most, timed inside a virtual
// machine: TLS handshakes (every client of the API server and etcd, ECDSA P-256 as kubeadm's
// certificates), hashing and encrypting (every request on a TLS connection), encoding JSON
// (every object the API server serves). Go picks each one's implementation from the CPU's
// features, so the CPU model QEMU emulates decides which it runs. It prints one line per
// measure: name, value, unit.
package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

func main() {
	if err := measure(); err != nil {
		fmt.Fprintln(os.Stderr, "guestwork:", err)
		os.Exit(1)
	}
}

func measure() error {
	cert, err := selfSigned()
	if err != nil {
		return err
	}
	const handshakes = 40
	start := time.Now()
	for range handshakes {
		if err := handshake(cert); err != nil {
			return err
		}
	}
	fmt.Printf("tls-handshakes %.2f /s\n", handshakes/time.Since(start).Seconds())

	data := bytes.Repeat([]byte("kubernetes"), 1<<20/10)
	fmt.Printf("sha256 %.2f MB/s\n", throughput(data, func() { sha256.Sum256(data) }))
	block, _ := aes.NewCipher(make([]byte, 16))
	gcm, _ := cipher.NewGCM(block)
	nonce, out := make([]byte, gcm.NonceSize()), make([]byte, 0, len(data)+gcm.Overhead())
	fmt.Printf("aes-gcm %.2f MB/s\n", throughput(data, func() { gcm.Seal(out[:0], nonce, data, nil) }))

	type object struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
		Items  []int             `json:"items"`
	}
	objects := make([]object, 2000)
	for i := range objects {
		objects[i] = object{Name: fmt.Sprintf("pod-%d", i), Labels: map[string]string{"app": "x", "tier": "control-plane"}, Items: []int{1, 2, 3, i}}
	}
	encoded, _ := json.Marshal(objects)
	fmt.Printf("json %.2f MB/s\n", throughput(encoded, func() {
		var back []object
		b, _ := json.Marshal(objects)
		_ = json.Unmarshal(b, &back)
	}))
	return nil
}

// throughput runs f, which works on data, for about two seconds and gives MB/s.
func throughput(data []byte, f func()) float64 {
	n, start := 0, time.Now()
	for time.Since(start) < 2*time.Second {
		f()
		n++
	}
	return float64(n*len(data)) / 1e6 / time.Since(start).Seconds()
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "guestwork"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"guestwork"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// handshake is one TLS 1.3 handshake over an in-memory connection, with the certificate
// verified as a client of the API server verifies it.
func handshake(cert tls.Certificate) error {
	pool := x509.NewCertPool()
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return err
	}
	pool.AddCert(leaf)
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	errs := make(chan error, 1)
	go func() { errs <- tls.Server(s, &tls.Config{Certificates: []tls.Certificate{cert}}).Handshake() }()
	if err := tls.Client(c, &tls.Config{RootCAs: pool, ServerName: "guestwork"}).Handshake(); err != nil {
		return err
	}
	return <-errs
}
