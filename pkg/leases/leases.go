// Package leases reads the DHCP server's record of who has which address, in ISC dhcpd's
// dhcpd.leases format or dnsmasq's leases file, and resolves placed hosts' MACs to IPs, or
// falls back to the IPs a BareMetalHost's inspection reported.
//
// Where a MAC has several leases, the newest active one wins. A lease whose end has passed is
// no address, though the file may still hold it as active: each server rewrites its file on its
// own schedule (dnsmasq at its next event, dhcpd when it next writes the file), so the file
// lags the server. FileSource compares ends with the clock it is given.
package leases

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"
)

// Format names a lease file format.
type Format string

// The lease file formats.
const (
	FormatISC     Format = "isc"
	FormatDnsmasq Format = "dnsmasq"
)

// Table maps lower-case MAC addresses to their newest active lease.
type Table map[string]Lease

// Lease is one MAC's address as of its lease's start (ISC) or expiry (dnsmasq).
type Lease struct {
	IP netip.Addr
	// Rank orders a MAC's leases: the higher one wins. ISC: the start time; dnsmasq: the
	// expiry (an infinite lease ranks highest). Equal ranks: the later line in the file wins.
	Rank int64
	// Ends is when the lease lapses; zero for a lease that never does.
	Ends time.Time
}

// LapsedAt says whether the lease has lapsed at now.
func (l Lease) LapsedAt(now time.Time) bool { return !l.Ends.IsZero() && !now.Before(l.Ends) }

// offer records a lease, keeping the newest for its MAC.
func (t Table) offer(mac string, l Lease) {
	if prev, ok := t[mac]; ok && prev.Rank > l.Rank {
		return
	}
	t[mac] = l
}

// record is one declaration of an address in a lease file.
type record struct {
	mac    string
	active bool
	lease  Lease
}

// ledger keeps the last declaration of each address: a lease file is a log, and only an
// address's last record says who holds it now (dhcpd.leases(5)). An address released by one
// MAC and now active for another is the other's; one whose last record is free or expired is
// nobody's. So no address ever goes to two MACs.
type ledger struct {
	last  map[netip.Addr]int // address → index in records of its last declaration
	order []record
}

func newLedger() *ledger { return &ledger{last: map[netip.Addr]int{}} }

// declare records an address's newest declaration.
func (l *ledger) declare(r record) {
	if i, ok := l.last[r.lease.IP]; ok {
		l.order[i].active = false // superseded
	}
	l.last[r.lease.IP] = len(l.order)
	l.order = append(l.order, r)
}

// table is what the ledger says now: each MAC's newest address in effect and active, in file
// order so that equal ranks go to the later record.
func (l *ledger) table() Table {
	t := Table{}
	for _, r := range l.order {
		if r.active {
			t.offer(r.mac, r.lease)
		}
	}
	return t
}

// Parse reads a lease file in the given format.
func Parse(format Format, r io.Reader) (Table, error) {
	switch format {
	case FormatISC:
		return ParseISC(r)
	case FormatDnsmasq:
		return ParseDnsmasq(r)
	}
	return nil, fmt.Errorf("unknown lease file format %q: want %q or %q", format, FormatISC, FormatDnsmasq)
}

// ParseFormat accepts the names the CLI and the controller options use.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case FormatISC, FormatDnsmasq:
		return f, nil
	case "dhcpd":
		return FormatISC, nil
	}
	return "", fmt.Errorf("unknown lease file format %q: want %q or %q", s, FormatISC, FormatDnsmasq)
}

// normalizeMAC returns an Ethernet MAC in lower case with colons, or false.
func normalizeMAC(s string) (string, bool) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return "", false
	}
	return hw.String(), true
}

// Detect guesses a lease file's format: ISC's has `lease ADDRESS {` blocks, dnsmasq's does not.
func Detect(raw []byte) Format {
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "lease" && strings.HasPrefix(f[len(f)-1], "{") {
			return FormatISC
		}
	}
	return FormatDnsmasq
}
