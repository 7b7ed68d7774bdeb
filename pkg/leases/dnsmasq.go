package leases

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// ParseDnsmasq reads dnsmasq's leases file: one lease a line, "EXPIRY MAC IP HOSTNAME
// CLIENT-ID", EXPIRY in Unix seconds or 0 for an infinite lease. Every line is a lease dnsmasq
// held when it last wrote the file (it drops lapsed ones then, not when they lapse); among a
// MAC's leases the latest expiry wins. The "duid" line and DHCPv6 leases (whose second field is an IAID, not a MAC)
// are skipped.
//
// An address on two lines (a file caught mid-rewrite, or edited) goes to the later line only.
func ParseDnsmasq(r io.Reader) (Table, error) {
	ledger := newLedger()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] == "duid" || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) < 3 {
			return nil, fmt.Errorf("line %d: want EXPIRY MAC IP [HOSTNAME [CLIENT-ID]], found %d fields", line, len(fields))
		}
		expiry, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || expiry < 0 {
			return nil, fmt.Errorf("line %d: expiry %q is not a Unix time", line, fields[0])
		}
		var ends time.Time
		if expiry == 0 {
			expiry = math.MaxInt64 // an infinite lease
		} else {
			ends = time.Unix(expiry, 0).UTC()
		}
		mac, ok := normalizeMAC(fields[1])
		if !ok {
			continue // a DHCPv6 lease or a non-Ethernet hardware address
		}
		ip, err := netip.ParseAddr(fields[2])
		if err != nil {
			return nil, fmt.Errorf("line %d: %q is not an IP address", line, fields[2])
		}
		ledger.declare(record{mac: mac, active: true, lease: Lease{IP: ip, Rank: expiry, Ends: ends}})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return ledger.table(), nil
}
