package siteregistry

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// Environment variables that carry the site registry's settings, so scripts need not repeat
// them and the password never appears in a process list.
const (
	EnvRegistry = "BPA_REGISTRY"
	EnvUsername = "BPA_REGISTRY_USERNAME"
	EnvPassword = "BPA_REGISTRY_PASSWORD" //nolint:gosec // G101: the variable's name, not a credential
)

// Flags reach the site registry: the upload commands, serve-files and install-software share
// them. The password comes from the environment or standard input, never a flag.
type Flags struct {
	Registry, Username, CAFile string
	PasswordStdin, PlainHTTP   bool
}

// AddTo declares the flags, their defaults read from the environment.
func (f *Flags) AddTo(fl *pflag.FlagSet) {
	fl.StringVar(&f.Registry, "registry", os.Getenv(EnvRegistry), "the site registry, host[:port][/prefix] ($"+EnvRegistry+")")
	fl.StringVar(&f.Username, "username", os.Getenv(EnvUsername), "registry account ($"+EnvUsername+"; the password from $"+EnvPassword+" or --password-stdin)")
	fl.BoolVar(&f.PasswordStdin, "password-stdin", false, "read the registry password from standard input")
	fl.StringVar(&f.CAFile, "ca-file", "", "PEM CA bundle the registry's certificate chains to (default: the system's)")
	fl.BoolVar(&f.PlainHTTP, "plain-http", false, "talk HTTP, not HTTPS (a registry on loopback, for development)")
}

// Client builds the registry client from the flags and the environment.
func (f *Flags) Client(stdin io.Reader) (*Client, error) {
	if f.Registry == "" {
		return nil, errors.New("--registry: name the site registry (or set " + EnvRegistry + ")")
	}
	password := os.Getenv(EnvPassword)
	if f.PasswordStdin {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("--password-stdin: %w", err)
		}
		password = strings.TrimRight(line, "\r\n")
	}
	if f.Username != "" && password == "" {
		return nil, errors.New("--username " + f.Username + ": no password (set " + EnvPassword + " or use --password-stdin)")
	}
	return New(Config{
		Registry: f.Registry, Username: f.Username, Password: password,
		CAFile: f.CAFile, PlainHTTP: f.PlainHTTP,
	})
}
