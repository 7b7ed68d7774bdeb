package leases_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testutil"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
)

// The parsers read a file another program writes: whatever it holds, they must return a table
// or an error, never panic or hang, every address they return must be a valid IP under a
// normalised MAC, and no address may go to two MACs.
func fuzzParser(f *testing.F, fixture string, parse func([]byte) (leases.Table, error)) {
	raw, err := os.ReadFile(testutil.Fixture(f, fixture))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Fuzz(func(t *testing.T, data []byte) {
		table, err := parse(data)
		if err != nil {
			return
		}
		holder := map[string]string{}
		for mac, l := range table {
			if !l.IP.IsValid() {
				t.Fatalf("MAC %s has an invalid IP", mac)
			}
			if other, ok := holder[l.IP.String()]; ok {
				t.Fatalf("address %s goes to two MACs, %s and %s", l.IP, other, mac)
			}
			holder[l.IP.String()] = mac
			if len(mac) != 17 || bytes.ContainsAny([]byte(mac), "ABCDEF") {
				t.Fatalf("MAC %q is not normalised", mac)
			}
		}
	})
}

func FuzzParseISC(f *testing.F) {
	fuzzParser(f, "sample-site-dhcpd.leases", func(b []byte) (leases.Table, error) { return leases.ParseISC(bytes.NewReader(b)) })
}

func FuzzParseDnsmasq(f *testing.F) {
	fuzzParser(f, "sample-site-dnsmasq.leases", func(b []byte) (leases.Table, error) { return leases.ParseDnsmasq(bytes.NewReader(b)) })
}
