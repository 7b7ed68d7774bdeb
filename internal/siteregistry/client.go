// Package siteregistry talks to the site's OCI registry: it pushes files as artifacts with a
// resumable chunked upload (OCI distribution-spec), copies images into the registry, and reads
// artifacts back with their digests checked. It uses oras-go for references, authentication,
// manifests and copies; the chunked blob upload, which oras-go does not offer, follows the
// distribution spec directly on oras-go's authenticating client.
package siteregistry

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// Config says where the site registry is and how to reach it.
type Config struct {
	// Registry is host[:port] with an optional path prefix: 10.0.0.2:5000 or
	// registry.site.example/bpa. Repositories live under the prefix.
	Registry string
	// Username and Password authenticate (basic, or a token service's password grant). Empty: anonymous.
	Username, Password string //nolint:gosec // G117: held in memory for the client, never serialized
	// CAFile is a PEM bundle the registry's certificate chains to; empty: the system's roots.
	CAFile string
	// PlainHTTP talks HTTP instead of HTTPS (a registry on loopback in development only).
	PlainHTTP bool
	// Transport carries the requests; nil: one made from CAFile. Tests wrap it.
	Transport http.RoundTripper
}

// Client reaches the site registry's repositories.
type Client struct {
	host, prefix string
	plainHTTP    bool
	http         *auth.Client
}

// New checks the configuration and builds a client; it does not contact the registry.
func New(c Config) (*Client, error) {
	host, prefix, _ := strings.Cut(strings.TrimSuffix(c.Registry, "/"), "/")
	if host == "" {
		return nil, errors.New("registry: want host[:port][/path], got nothing")
	}
	if _, err := registry.ParseReference(host + "/" + joinPath(prefix, "x")); err != nil {
		return nil, fmt.Errorf("registry %q: %w", c.Registry, err)
	}
	if (c.Username == "") != (c.Password == "") {
		return nil, errors.New("registry credentials: want both a username and a password, or neither")
	}
	transport := c.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if c.CAFile != "" {
			pem, err := os.ReadFile(c.CAFile)
			if err != nil {
				return nil, fmt.Errorf("registry CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("registry CA file %s: no PEM certificate in it", c.CAFile)
			}
			t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		transport = t
	}
	client := &auth.Client{
		// No overall timeout: an OS image takes as long as it takes. Each chunk's request is
		// bounded by the caller's context; a stalled connection by the transport's own limits.
		Client: &http.Client{Transport: transport},
		Cache:  auth.NewCache(),
		Header: http.Header{"User-Agent": {"bpa-workflow-controller"}},
	}
	if c.Username != "" {
		client.Credential = auth.StaticCredential(host, auth.Credential{Username: c.Username, Password: c.Password})
	}
	return &Client{host: host, prefix: prefix, plainHTTP: c.PlainHTTP, http: client}, nil
}

// Host is the registry's host[:port].
func (c *Client) Host() string { return c.host }

// Repository is path under the site prefix, as an oras-go repository.
func (c *Client) Repository(path string) (*remote.Repository, error) {
	repo, err := remote.NewRepository(c.host + "/" + joinPath(c.prefix, path))
	if err != nil {
		return nil, fmt.Errorf("repository %q: %w", path, err)
	}
	repo.Client = c.http
	repo.PlainHTTP = c.plainHTTP
	return repo, nil
}

// Reference is the full reference of path:tag in the site registry, as a node would pull it.
func (c *Client) Reference(path, tag string) string {
	return c.host + "/" + joinPath(c.prefix, path) + ":" + tag
}

func (c *Client) scheme() string {
	if c.plainHTTP {
		return "http"
	}
	return "https"
}

func joinPath(prefix, path string) string {
	if prefix == "" {
		return path
	}
	return prefix + "/" + path
}

// chunkTimeout bounds one chunk's request: a chunk is small, so a request that takes this long
// has stalled, and the upload can resume from what the registry acknowledged.
const chunkTimeout = 10 * time.Minute
