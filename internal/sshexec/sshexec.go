// Package sshexec runs commands on a node over SSH (golang.org/x/crypto/ssh, never a shelled-out
// ssh), with host keys pinned: a node is reached only when its key is pinned already (only the
// pin-host-keys step pins), and a changed or missing key fails the connection with a message
// saying so. Commands are built by Quote from validated words only, and run with LC_ALL=C, so
// what they print does not depend on the node's locale.
package sshexec

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// HostKeyStore is where pinned host keys live (a Secret, in a step).
type HostKeyStore interface {
	// Lookup returns the pinned key of an address ("host:port"), if any.
	Lookup(ctx context.Context, addr string) (ssh.PublicKey, bool, error)
	// Where says where an address's key is pinned, for a message: "key K of Secret S".
	Where(addr string) string
}

// HostKeyChangedError is a node presenting another key than the pinned one.
type HostKeyChangedError struct {
	Addr      string
	Want, Got string // SHA256 fingerprints
	// Pin says where the pinned key is kept ("key K of Secret S"), when known.
	Pin string
}

func (e *HostKeyChangedError) Error() string {
	msg := fmt.Sprintf("the host key of %s changed: pinned %s, presented %s", e.Addr, e.Want, e.Got)
	if e.Pin != "" {
		return msg + "; if the node was reinstalled, delete " + e.Pin + " to accept the new key at the next run"
	}
	return msg + "; if the node was reinstalled, remove its pinned key to accept the new one"
}

// NotPinnedError is a node whose address has no pinned key: only pin-host-keys pins, so a
// step after it never trusts a key on first use (a node whose address changed, say).
type NotPinnedError struct {
	Addr string
	// Pin says where the key would be kept ("key K of Secret S").
	Pin string
}

func (e *NotPinnedError) Error() string {
	return fmt.Sprintf("no host key is pinned for %s (%s): only the Provisioning's pin-host-keys step pins a node's key; if the node's address changed, run the Provisioning again", e.Addr, e.Pin)
}

// ExitError is a command that ran and exited non-zero.
type ExitError struct {
	Command string
	Status  int
	Stderr  string
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("%s exited %d", e.Command, e.Status)
	if s := lastLine(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// ConnectionLostError is a command that could not run, or could not finish, because the
// connection to the node failed: a session refused, the connection reset or closed before the
// command's exit status came back. The node may be rebooting: it is worth trying again.
type ConnectionLostError struct {
	Addr    string
	Command string
	Err     error
}

func (e *ConnectionLostError) Error() string {
	return fmt.Sprintf("%s on %s: the connection was lost: %v", e.Command, e.Addr, e.Err)
}

func (e *ConnectionLostError) Unwrap() error { return e.Err }

// Lost reports whether err is a connection to a node lost under a command.
func Lost(err error) bool {
	var lost *ConnectionLostError
	return errors.As(err, &lost)
}

// NotAnsweringError is a node that did not answer: no TCP connection to its sshd (refused,
// unreachable, timed out), or no SSH handshake within the timeout. It says which address, and
// when it was tried, so an operator reading a retried step's last failure knows how recent it is.
type NotAnsweringError struct {
	Addr    string
	At      time.Time
	Timeout time.Duration
	Err     error
}

func (e *NotAnsweringError) Error() string {
	within := ""
	if e.Timeout > 0 {
		within = " within " + e.Timeout.String()
	}
	return fmt.Sprintf("%s did not answer%s (tried at %s): %v", e.Addr, within, e.At.UTC().Format(time.RFC3339), e.Err)
}

func (e *NotAnsweringError) Unwrap() error { return e.Err }

// NotAnswering reports whether err is a node that did not answer.
func NotAnswering(err error) bool {
	var na *NotAnsweringError
	return errors.As(err, &na)
}

// connect opens a TCP connection to addr; failing, or when the SSH handshake that follows
// times out (handshake), the error is a NotAnsweringError.
func connect(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	at := time.Now()
	dialer := net.Dialer{Timeout: timeout}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &NotAnsweringError{Addr: addr, At: at, Timeout: timeout, Err: err}
	}
	if timeout > 0 {
		_ = conn.SetDeadline(time.Now().Add(timeout))
	}
	return conn, nil
}

// handshakeTimedOut is err from an SSH handshake, as a NotAnsweringError when it timed out.
func handshakeTimedOut(addr string, at time.Time, timeout time.Duration, err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &NotAnsweringError{Addr: addr, At: at, Timeout: timeout, Err: fmt.Errorf("no SSH handshake: %w", err)}
	}
	return err
}

// Config says how to reach nodes.
type Config struct {
	User   string
	Signer ssh.Signer
	Keys   HostKeyStore
	// Timeout bounds the TCP connection and the SSH handshake.
	Timeout time.Duration
}

// LoadSigner reads a private key file (the mounted Secret). Its content never appears in an
// error.
func LoadSigner(path string) (ssh.Signer, error) {
	raw, err := os.ReadFile(path) //nolint:gosec // G304: the mounted Secret's path, a flag of the compiled step
	if err != nil {
		return nil, fmt.Errorf("reading the SSH key: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(raw)
	if err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, fmt.Errorf("the SSH key in %s is protected by a passphrase; the Secret must hold an unencrypted key", path)
		}
		return nil, fmt.Errorf("the SSH key in %s cannot be parsed (want an OpenSSH or PEM private key)", path)
	}
	return signer, nil
}

// Client is one connection to a node.
type Client struct {
	addr   string
	client *ssh.Client
}

// Dial connects to addr ("host:port") if its host key is pinned in the store, and is the
// pinned one.
func Dial(ctx context.Context, cfg Config, addr string) (*Client, error) {
	pinned, ok, err := cfg.Keys.Lookup(ctx, addr)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &NotPinnedError{Addr: addr, Pin: cfg.Keys.Where(addr)}
	}
	callback := func(_ string, _ net.Addr, key ssh.PublicKey) error {
		if !SameKey(pinned, key) {
			return &HostKeyChangedError{Addr: addr, Want: ssh.FingerprintSHA256(pinned), Got: ssh.FingerprintSHA256(key), Pin: cfg.Keys.Where(addr)}
		}
		return nil
	}
	clientCfg := &ssh.ClientConfig{
		User:            cfg.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(cfg.Signer)},
		HostKeyCallback: callback,
		// Ask for the pinned key's algorithm, so a node with several keys presents that one.
		HostKeyAlgorithms: algorithmsFor(pinned.Type()),
		Timeout:           cfg.Timeout,
	}
	at := time.Now()
	conn, err := connect(ctx, addr, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, clientCfg)
	if err != nil {
		_ = conn.Close()
		var changed *HostKeyChangedError
		if errors.As(err, &changed) {
			return nil, changed
		}
		return nil, fmt.Errorf("SSH to %s as %s: %w", addr, cfg.User, handshakeTimedOut(addr, at, cfg.Timeout, err))
	}
	_ = conn.SetDeadline(time.Time{})
	return &Client{addr: addr, client: ssh.NewClient(c, chans, reqs)}, nil
}

// errScanned ends a handshake once the host key is known.
var errScanned = errors.New("host key scanned")

// ScanHostKey reads the host key addr presents, without logging in: the key comes before any
// authentication. With pinned, the node is asked for the pinned key's algorithm, so a node
// with several keys presents the one to compare.
func ScanHostKey(ctx context.Context, addr string, pinned ssh.PublicKey, timeout time.Duration) (ssh.PublicKey, error) {
	var key ssh.PublicKey
	cfg := &ssh.ClientConfig{
		User: "bpa-host-key-scan",
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
			key = k
			return errScanned
		},
		Timeout: timeout,
	}
	if pinned != nil {
		cfg.HostKeyAlgorithms = algorithmsFor(pinned.Type())
	}
	at := time.Now()
	conn, err := connect(ctx, addr, timeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_, _, _, err = ssh.NewClientConn(conn, addr, cfg)
	if key != nil {
		return key, nil
	}
	return nil, fmt.Errorf("SSH handshake with %s: %w", addr, handshakeTimedOut(addr, at, timeout, err))
}

// SameKey reports whether two keys are the same key.
func SameKey(a, b ssh.PublicKey) bool {
	return a.Type() == b.Type() && subtle.ConstantTimeCompare(a.Marshal(), b.Marshal()) == 1
}

// KnownHostsLine is addr's key as a line of OpenSSH's known_hosts: "host key" for port 22,
// "[host]:port key" otherwise.
func KnownHostsLine(addr string, key ssh.PublicKey) (string, error) {
	pattern, err := KnownHostsPattern(addr)
	if err != nil {
		return "", err
	}
	return pattern + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))), nil
}

// KnownHostsPattern is how known_hosts names addr: "host" for port 22, "[host]:port" otherwise.
func KnownHostsPattern(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if port != "22" {
		return "[" + host + "]:" + port, nil
	}
	return host, nil
}

func algorithmsFor(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

// Close closes the connection.
func (c *Client) Close() error { return c.client.Close() }

// SFTP opens an SFTP session on the connection (the node's sftp subsystem), for copying files
// without a shell in the way. The caller closes it.
func (c *Client) SFTP() (*sftp.Client, error) {
	s, err := sftp.NewClient(c.client)
	if err != nil {
		return nil, fmt.Errorf("%s: opening an SFTP session: %w", c.addr, err)
	}
	return s, nil
}

// Locale is the environment every command runs with: messages matched by a step (apt's lock,
// dpkg's, coreutils') are the untranslated ones whatever the node's locale.
const Locale = "LC_ALL=C"

// Privileged is a command run as root by a user that is not: sudo without a password prompt
// (-n: a node asking for one fails at once), with env's assignments (VAR=value) and the locale
// set again, since sudo resets the environment. sudo sets them itself, so a sudoers rule for
// the command with the SETENV tag allows them (ALL implies SETENV); no rule for env(1), which
// would allow any command, is needed.
func Privileged(env []string, words ...string) []string {
	out := append([]string{"sudo", "-n", Locale}, env...)
	return append(out, words...)
}

// AsRoot is a command run by root with env's assignments: env(1) sets them, since a quoted
// assignment is a command name to the shell.
func AsRoot(env []string, words ...string) []string {
	if len(env) == 0 {
		return words
	}
	out := append([]string{"env"}, env...)
	return append(out, words...)
}

// SudoRefusedError is sudo refusing to run a command without a password, or at all: waiting
// cannot cure it.
type SudoRefusedError struct {
	Command string
	Reason  string
}

func (e *SudoRefusedError) Error() string {
	return fmt.Sprintf("sudo refused to run %s: %s; the login user needs passwordless sudo for the steps' commands (docs/security.md, \"sudo rights\")", e.Command, e.Reason)
}

// sudoRefusals are sudo's own messages (LC_ALL=C) when it will not run a command.
var sudoRefusals = []string{"a password is required", "a terminal is required", "is not in the sudoers file", "is not allowed to execute", "not allowed to set the following environment variables"}

// SudoRefused returns a *SudoRefusedError when err is sudo refusing to run a command, nil
// otherwise.
func SudoRefused(err error) error {
	var exit *ExitError
	if !errors.As(err, &exit) {
		return nil
	}
	for _, line := range strings.Split(exit.Stderr, "\n") {
		line = strings.TrimSpace(line)
		for _, r := range sudoRefusals {
			if strings.Contains(line, r) {
				return &SudoRefusedError{Command: exit.Command, Reason: line}
			}
		}
	}
	return nil
}

// Run runs a command (built with Quote) with LC_ALL=C and returns its stdout; a non-zero exit
// is an *ExitError carrying stderr. The context cancels it.
func (c *Client) Run(ctx context.Context, command string) (stdout []byte, err error) {
	s, err := c.client.NewSession()
	if err != nil {
		return nil, &ConnectionLostError{Addr: c.addr, Command: program(command), Err: fmt.Errorf("opening a session: %w", err)}
	}
	defer s.Close()
	// What a node prints is bounded: a node that floods its output fails the command, and only
	// the end of its stderr is kept for the message.
	out := &cappedBuffer{max: MaxOutput}
	errb := &tailBuffer{max: maxStderr}
	s.Stdout, s.Stderr = out, errb
	done := make(chan error, 1)
	go func() { done <- s.Run(Locale + " " + command) }()
	select {
	case <-ctx.Done():
		_ = s.Signal(ssh.SIGKILL)
		return nil, ctx.Err()
	case err = <-done:
	}
	if out.over {
		return nil, fmt.Errorf("%s on %s printed more than %d bytes", program(command), c.addr, MaxOutput)
	}
	if err != nil {
		var exit *ssh.ExitError
		if errors.As(err, &exit) {
			return out.Bytes(), &ExitError{Command: program(command), Status: exit.ExitStatus(), Stderr: errb.String()}
		}
		// No exit status: the connection failed under the command (ssh.ExitMissingError, or the
		// transport's own error).
		return nil, &ConnectionLostError{Addr: c.addr, Command: program(command), Err: err}
	}
	return out.Bytes(), nil
}

// MaxOutput bounds what a command may print on stdout: far more than an admin.conf or a
// package query, far less than a step's memory.
const MaxOutput = 4 << 20

// maxStderr is how much of the end of a command's stderr is kept for its message.
const maxStderr = 64 << 10

// errOutputTooLarge ends a command that prints more than MaxOutput.
var errOutputTooLarge = errors.New("output too large")

// cappedBuffer keeps up to max bytes and refuses more, which ends the command. It only
// writes: a bytes.Buffer's ReadFrom, which io.Copy would prefer, knows no bound.
type cappedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.max {
		b.over = true
		return 0, errOutputTooLarge
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) Bytes() []byte { return b.buf.Bytes() }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string { return string(b.buf) }

// safeWord is what Quote accepts: package names and versions (Debian and RPM grammar), paths,
// options. No quote, no whitespace, no shell metacharacter beyond what single quotes neutralise.
var safeWord = regexp.MustCompile(`^[A-Za-z0-9_./:=+~%@,^-]+$`)

// Quote builds a command line from words, each single-quoted after checking it holds only
// characters of safeWord: nothing that reaches the remote shell can be anything but a word.
func Quote(words ...string) (string, error) {
	quoted := make([]string, len(words))
	for i, w := range words {
		if !safeWord.MatchString(w) {
			return "", fmt.Errorf("refusing to send %q to a shell: only letters, digits and _./:=+~%%@,^- are allowed", w)
		}
		quoted[i] = "'" + w + "'"
	}
	return strings.Join(quoted, " "), nil
}

// program names the program a command line runs, past the wrappers a step puts before it
// (`sudo -n`, `env VAR=value`): what an operator needs to read in an error.
func program(command string) string {
	words := strings.Fields(command)
	for _, w := range words {
		w = strings.Trim(w, "'")
		if w == "sudo" || w == "env" || strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
			continue
		}
		return w
	}
	if len(words) == 0 {
		return ""
	}
	return strings.Trim(words[0], "'")
}

// maxLine bounds the line of a node's stderr an error quotes.
const maxLine = 512

// lastLine is the last line of a node's stderr as an error may quote it: printable characters
// only (no terminal escapes, no invalid UTF-8) and at most maxLine bytes.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	line := strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, strings.TrimSpace(lines[len(lines)-1]))
	if len(line) > maxLine {
		cut := line[:maxLine]
		for !utf8.ValidString(cut) {
			cut = cut[:len(cut)-1]
		}
		line = cut + "…"
	}
	return line
}

// Trusted single-quotes a constant of the program (a query format, say) that Quote would
// refuse for its $, { or \. It must never be given outside input.
func Trusted(constant string) string {
	if strings.Contains(constant, "'") {
		panic("sshexec.Trusted: a constant with a single quote")
	}
	return "'" + constant + "'"
}
