package leases_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
)

const benchLeases = 100000

func BenchmarkParseISC100000Leases(b *testing.B) {
	var buf bytes.Buffer
	for i := 0; i < benchLeases; i++ {
		fmt.Fprintf(&buf, "lease 10.%d.%d.%d {\n  starts 6 2025/11/22 08:%02d:40;\n  ends 6 2025/11/22 20:26:40;\n  cltt 6 2025/11/22 08:26:40;\n  binding state active;\n  next binding state free;\n  hardware ethernet 02:00:00:%02x:%02x:%02x;\n  client-hostname \"node-%d\";\n}\n",
			i>>16, (i>>8)&255, i&255, i%60, i>>16, (i>>8)&255, i&255, i)
	}
	raw := buf.Bytes()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		table, err := leases.ParseISC(bytes.NewReader(raw))
		if err != nil || len(table) != benchLeases {
			b.Fatal(err, len(table))
		}
	}
}

func BenchmarkParseDnsmasq100000Leases(b *testing.B) {
	var buf bytes.Buffer
	for i := 0; i < benchLeases; i++ {
		fmt.Fprintf(&buf, "%d 02:00:00:%02x:%02x:%02x 10.%d.%d.%d node-%d 01:02:00:00:%02x:%02x:%02x\n",
			1763843200+i, i>>16, (i>>8)&255, i&255, i>>16, (i>>8)&255, i&255, i, i>>16, (i>>8)&255, i&255)
	}
	raw := buf.Bytes()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		table, err := leases.ParseDnsmasq(bytes.NewReader(raw))
		if err != nil || len(table) != benchLeases {
			b.Fatal(err, len(table))
		}
	}
}
