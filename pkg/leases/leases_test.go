package leases_test

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
)

func ips(t leases.Table) map[string]string {
	out := map[string]string{}
	for mac, l := range t {
		out[mac] = l.IP.String()
	}
	return out
}

var siteIPs = map[string]string{
	"00:c5:16:05:61:b2": "172.22.0.11",
	"00:c2:14:06:61:b5": "172.22.0.12",
	"00:c6:14:04:61:b2": "172.22.0.13",
	"00:c2:12:03:62:b2": "172.22.0.14",
	"00:e1:ba:ce:df:bd": "172.22.0.15",
}

func TestParseFixtures(t *testing.T) {
	for _, tc := range []struct {
		file   string
		format leases.Format
	}{
		{"sample-site-dhcpd.leases", leases.FormatISC},
		{"sample-site-dnsmasq.leases", leases.FormatDnsmasq},
	} {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(testutil.Fixture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := leases.Detect(raw); got != tc.format {
				t.Errorf("Detect = %q, want %q", got, tc.format)
			}
			table, err := leases.Parse(tc.format, strings.NewReader(string(raw)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(siteIPs, ips(table)); diff != "" {
				t.Errorf("the older free and expired leases must lose (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseISC(t *testing.T) {
	cases := []struct {
		name, reason, in string
		want             map[string]string
		wantErr          string
	}{
		{
			name:   "newest-active-by-starts",
			reason: "of a MAC's active leases the latest start wins, wherever it stands in the file",
			in: `lease 10.0.0.2 { starts 1 2025/01/02 00:00:00; binding state active; hardware ethernet 00:00:00:00:00:01; }
lease 10.0.0.1 { starts 1 2025/01/01 00:00:00; binding state active; hardware ethernet 00:00:00:00:00:01; }`,
			want: map[string]string{"00:00:00:00:00:01": "10.0.0.2"},
		},
		{
			name:   "same-start-later-wins",
			reason: "dhcpd appends renewals: with equal starts, the later block is the server's latest word",
			in: `lease 10.0.0.1 { starts 1 2025/01/01 00:00:00; binding state active; hardware ethernet 00:00:00:00:00:01; }
lease 10.0.0.2 { starts 1 2025/01/01 00:00:00; binding state active; hardware ethernet 00:00:00:00:00:01; }`,
			want: map[string]string{"00:00:00:00:00:01": "10.0.0.2"},
		},
		{
			name:   "inactive-lose",
			reason: "free, expired, released and backup leases never count, however new",
			in: `lease 10.0.0.1 { starts 1 2025/01/01 00:00:00; binding state active; hardware ethernet 00:00:00:00:00:01; }
lease 10.0.0.2 { starts 1 2026/01/01 00:00:00; binding state free; hardware ethernet 00:00:00:00:00:01; }
lease 10.0.0.3 { starts 1 2026/01/01 00:00:00; binding state released; hardware ethernet 00:00:00:00:00:02; }`,
			want: map[string]string{"00:00:00:00:00:01": "10.0.0.1"},
		},
		{
			name:   "released-then-active-for-another",
			reason: "the file is a log: an address released by one MAC and now active for another is the other's only",
			in: `lease 10.0.0.1 { starts 1 2025/01/01 00:00:00; binding state active; hardware ethernet 00:00:00:00:00:01; }
lease 10.0.0.1 { starts 1 2025/01/02 00:00:00; binding state released; hardware ethernet 00:00:00:00:00:01; }
lease 10.0.0.1 { starts 1 2025/01/03 00:00:00; binding state active; hardware ethernet 00:00:00:00:00:02; }`,
			want: map[string]string{"00:00:00:00:00:02": "10.0.0.1"},
		},
		{
			name:   "last-record-expired",
			reason: "an address whose last record is expired or free is nobody's, whatever came before",
			in: `lease 10.0.0.1 { starts 1 2025/01/01 00:00:00; binding state active; hardware ethernet 00:00:00:00:00:01; }
lease 10.0.0.1 { starts 1 2025/01/01 00:00:00; binding state expired; hardware ethernet 00:00:00:00:00:01; }
lease 10.0.0.2 { starts 1 2025/01/01 00:00:00; binding state active; hardware ethernet 00:00:00:00:00:02; }
lease 10.0.0.2 { binding state free; }`,
			want: map[string]string{},
		},
		{
			name:   "damaged-entry-touches-only-its-address",
			reason: "a block whose hardware address is malformed holds its address for nobody; the rest of the file stands",
			in: `lease 10.0.0.1 { binding state active; hardware ethernet 00:00:00:00:00:01; }
lease 10.0.0.1 { binding state active; hardware ethernet zz:zz; }
lease 10.0.0.2 { binding state active; hardware ethernet 00:00:00:00:00:02; }`,
			want: map[string]string{"00:00:00:00:00:02": "10.0.0.2"},
		},
		{
			name:   "next-binding-state-is-not-binding-state",
			reason: "only `binding state` describes the lease now",
			in:     `lease 10.0.0.1 { binding state active; next binding state free; rewind binding state free; hardware ethernet 00:00:00:00:00:01; }`,
			want:   map[string]string{"00:00:00:00:00:01": "10.0.0.1"},
		},
		{
			name:   "unknown-statements-and-blocks-skipped",
			reason: "statements the parser does not know, quoted braces, comments and other top-level blocks are skipped",
			in: `# comment
authoring-byte-order little-endian;
server-duid "\000\001{;}";
failover peer "dhcp" state { my state normal at 1 2025/01/01 00:00:00; }
host fixed { hardware ethernet 00:00:00:00:00:09; fixed-address 10.0.0.9; }
lease 10.0.0.1 {
  starts epoch 1735689600; # 2025-01-01
  binding state active;
  hardware ethernet 00:00:00:00:00:01;
  uid "\001\000{\"}";
  set vendor-class-identifier = "PXEClient;x";
  on commit { set x = "y"; }
  client-hostname "node-1";
}`,
			want: map[string]string{"00:00:00:00:00:01": "10.0.0.1"},
		},
		{
			name:    "bad-address",
			reason:  "a lease without an IP address is an error naming the line",
			in:      "\n\nlease not-an-ip { binding state active; }",
			wantErr: `line 3: lease "not-an-ip": not an IP address`,
		},
		{
			name:    "unterminated-block",
			reason:  "a truncated file is an error, not a silent partial table",
			in:      "lease 10.0.0.1 {\n  binding state active;\n",
			wantErr: "lease 10.0.0.1 (line 1): line 3: file ends where '}' was expected",
		},
		{
			name:    "missing-semicolon",
			reason:  "a statement cut off before its ';' is an error",
			in:      "lease 10.0.0.1 { binding state active }",
			wantErr: `lease 10.0.0.1 (line 1): line 1: statement "binding" has no ';' before '}'`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, err := leases.ParseISC(strings.NewReader(tc.in))
			checkParse(t, tc.reason, table, err, tc.want, tc.wantErr)
		})
	}
}

func TestParseDnsmasq(t *testing.T) {
	cases := []struct {
		name, reason, in string
		want             map[string]string
		wantErr          string
	}{
		{
			name:   "address-on-two-lines",
			reason: "one address never goes to two MACs: the later line holds it",
			in:     "100 00:00:00:00:00:01 10.0.0.1 a *\n100 00:00:00:00:00:02 10.0.0.1 b *\n",
			want:   map[string]string{"00:00:00:00:00:02": "10.0.0.1"},
		},
		{
			name:   "latest-expiry-wins",
			reason: "of a MAC's leases the latest expiry wins",
			in:     "200 00:00:00:00:00:01 10.0.0.2 a *\n100 00:00:00:00:00:01 10.0.0.1 a *\n",
			want:   map[string]string{"00:00:00:00:00:01": "10.0.0.2"},
		},
		{
			name:   "infinite-lease-wins",
			reason: "expiry 0 is an infinite lease, newer than any time",
			in:     "0 00:00:00:00:00:01 10.0.0.3 a *\n200 00:00:00:00:00:01 10.0.0.2 a *\n",
			want:   map[string]string{"00:00:00:00:00:01": "10.0.0.3"},
		},
		{
			name:   "ipv6-and-duid-skipped",
			reason: "the duid line and DHCPv6 leases have no MAC",
			in:     "duid 00:01:00:01:2c:c5:16:05\n100 00:00:00:00:00:01 10.0.0.1 a 01:00:00:00:00:00:01\n1700000000 1234567 fd00::5 host6 00:01:00:01\n",
			want:   map[string]string{"00:00:00:00:00:01": "10.0.0.1"},
		},
		{
			name:   "upper-case-mac",
			reason: "MACs are normalised to lower case",
			in:     "100 00:C5:16:05:61:B2 10.0.0.1\n",
			want:   map[string]string{"00:c5:16:05:61:b2": "10.0.0.1"},
		},
		{
			name:    "bad-expiry",
			reason:  "a line whose expiry is not a time is an error naming the line",
			in:      "100 00:00:00:00:00:01 10.0.0.1\nsoon 00:00:00:00:00:02 10.0.0.2\n",
			wantErr: `line 2: expiry "soon" is not a Unix time`,
		},
		{
			name:    "bad-ip",
			reason:  "a lease of no IP is an error",
			in:      "100 00:00:00:00:00:01 10.0.0.300\n",
			wantErr: `line 1: "10.0.0.300" is not an IP address`,
		},
		{
			name:    "short-line",
			reason:  "a line too short to be a lease is an error",
			in:      "100 00:00:00:00:00:01\n",
			wantErr: "line 1: want EXPIRY MAC IP [HOSTNAME [CLIENT-ID]], found 2 fields",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, err := leases.ParseDnsmasq(strings.NewReader(tc.in))
			checkParse(t, tc.reason, table, err, tc.want, tc.wantErr)
		})
	}
}

func checkParse(t *testing.T, reason string, table leases.Table, err error, want map[string]string, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || err.Error() != wantErr {
			t.Fatalf("%s:\nwant error %q\ngot        %v", reason, wantErr, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", reason, err)
	}
	if diff := cmp.Diff(want, ips(table)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", reason, diff)
	}
}

func TestResolve(t *testing.T) {
	hosts := testutil.SiteHosts(t)
	placed := []bpav1.Node{
		{Label: "a", Role: "master", BareMetalHost: "metal3/node-1", MAC: "00:c5:16:05:61:b2"},
		{Label: "b", Role: "worker", BareMetalHost: "metal3/node-3", MAC: "3c:fd:fe:b5:10:a0"},
		{Label: "c", Role: "worker", BareMetalHost: "metal3/node-6", MAC: "00:e1:ba:ce:df:be"},
	}
	_, err := leases.Resolve(placed, leases.NewHostSource(hosts))
	want := "entry \"b\" (BareMetalHost metal3/node-3): BareMetalHost metal3/node-3 reports no IP for its NIC with MAC 3c:fd:fe:b5:10:a0\n" +
		"entry \"c\" (BareMetalHost metal3/node-6): BareMetalHost metal3/node-6 reports no IP for its NIC with MAC 00:e1:ba:ce:df:be"
	if err == nil || err.Error() != want {
		t.Fatalf("every host without an address must be named:\nwant %q\ngot  %v", want, err)
	}
	got, err := leases.Resolve(placed[:1], leases.FileSource{Table: leases.Table{}, Name: "dhcpd.leases"})
	if err == nil || !strings.Contains(err.Error(), "no active lease for MAC 00:c5:16:05:61:b2 in dhcpd.leases") {
		t.Fatalf("a missing lease must be named, got %v %v", got, err)
	}
	got, err = leases.Resolve(placed[:1], leases.NewHostSource(hosts))
	if err != nil || got[0].IP != "172.22.0.11" {
		t.Fatalf("NIC IP: got %v, %v", got, err)
	}
	if placed[0].IP != "" {
		t.Fatal("Resolve modified its input")
	}
	// A dual-stack NIC: its IPv4 address, whatever the order; IPv6 only without one; never a
	// link-local one.
	nics := func(ips ...string) leases.HostSource {
		h := hosts[0].DeepCopy()
		h.Status.HardwareDetails.NIC = nil
		for _, ip := range ips {
			h.Status.HardwareDetails.NIC = append(h.Status.HardwareDetails.NIC, metal3v1alpha1.NIC{MAC: "00:c5:16:05:61:b2", IP: ip})
		}
		return leases.NewHostSource([]metal3v1alpha1.BareMetalHost{*h})
	}
	for _, tc := range []struct {
		ips  []string
		want string
	}{
		{[]string{"2001:db8::11", "172.22.0.11"}, "172.22.0.11"},
		{[]string{"fe80::1", "2001:db8::11"}, "2001:db8::11"},
		{[]string{"fe80::1"}, ""},
	} {
		got, err := leases.Resolve(placed[:1], nics(tc.ips...))
		if tc.want == "" {
			if err == nil {
				t.Errorf("NICs %v: got %v, want no address", tc.ips, got)
			}
			continue
		}
		if err != nil || got[0].IP != tc.want {
			t.Errorf("NICs %v: got %v (%v), want %s", tc.ips, got, err, tc.want)
		}
	}

	// Whatever the source, a plan never gives one address to two nodes.
	twice := leases.FileSource{Name: "f", Table: leases.Table{
		"00:c5:16:05:61:b2": {IP: netip.MustParseAddr("10.0.0.1")}, "3c:fd:fe:b5:10:a0": {IP: netip.MustParseAddr("10.0.0.1")},
	}}
	if _, err := leases.Resolve(placed[:2], twice); err == nil || !strings.Contains(err.Error(), `entries "a" and "b" would both get address 10.0.0.1`) {
		t.Fatalf("one address for two nodes: %v", err)
	}
}

// TestEveryMissingLeaseIsNamed: of two entries without an address, both are named, whatever
// keeps each from one: no lease, a freed one, or one still in the file as active though its end
// has passed (the server rewrites the file on its own schedule).
func TestEveryMissingLeaseIsNamed(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	placed := []bpav1.Node{
		{Label: "master", BareMetalHost: "metal3/node-1", MAC: "00:c5:16:05:61:b2"},
		{Label: "worker-1", BareMetalHost: "metal3/node-2", MAC: "00:c2:14:06:61:b5"},
		{Label: "worker-2", BareMetalHost: "metal3/node-3", MAC: "00:c6:14:04:61:b2"},
	}
	for _, tc := range []struct {
		name   string
		format leases.Format
		file   string
		want   string
	}{
		{
			name:   "dnsmasq: a lapsed lease and none",
			format: leases.FormatDnsmasq,
			file: fmt.Sprintf("0 00:c5:16:05:61:b2 172.22.0.11 node-1 *\n%d 00:c2:14:06:61:b5 172.22.0.12 node-2 *\n",
				now.Add(-time.Hour).Unix()),
			want: `entry "worker-1" (BareMetalHost metal3/node-2): the lease of 172.22.0.12 for MAC 00:c2:14:06:61:b5 in leases lapsed at 2026-12-05T11:00:00Z (the DHCP server has not rewritten the file since): the host has not renewed it` + "\n" +
				`entry "worker-2" (BareMetalHost metal3/node-3): no active lease for MAC 00:c6:14:04:61:b2 in leases`,
		},
		{
			name:   "isc: a freed lease, and an active one past its end",
			format: leases.FormatISC,
			file: "lease 172.22.0.11 {\n  starts epoch 1764900000;\n  ends never;\n  binding state active;\n  hardware ethernet 00:c5:16:05:61:b2;\n}\n" +
				"lease 172.22.0.12 {\n  starts 4 2026/12/03 10:00:00;\n  ends 4 2026/12/03 22:00:00;\n  binding state free;\n  hardware ethernet 00:c2:14:06:61:b5;\n}\n" +
				"lease 172.22.0.13 {\n  starts 5 2026/12/04 10:00:00;\n  ends 5 2026/12/04 22:00:00;\n  binding state active;\n  hardware ethernet 00:c6:14:04:61:b2;\n}\n",
			want: `entry "worker-1" (BareMetalHost metal3/node-2): no active lease for MAC 00:c2:14:06:61:b5 in leases` + "\n" +
				`entry "worker-2" (BareMetalHost metal3/node-3): the lease of 172.22.0.13 for MAC 00:c6:14:04:61:b2 in leases lapsed at 2026-12-04T22:00:00Z (the DHCP server has not rewritten the file since): the host has not renewed it`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table, err := leases.Parse(tc.format, strings.NewReader(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			_, err = leases.Resolve(placed, leases.FileSource{Table: table, Name: "leases", Now: now})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("want every entry without an address named:\n%s\ngot:\n%v", tc.want, err)
			}
			// Before its end, the same lease is the host's address.
			earlier := leases.FileSource{Table: table, Name: "leases", Now: now.Add(-48 * time.Hour)}
			if got, err := earlier.Lookup("", placed[0].MAC); err != nil || got != "172.22.0.11" {
				t.Errorf("the master's lease: %q, %v", got, err)
			}
		})
	}
}
