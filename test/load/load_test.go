//go:build load

package main

import (
	"testing"
	"time"
)

// BenchmarkLoad is the harness as a benchmark (`make bench-load`): one run of every measure
// and fault scenario on the local control plane, its figures reported as the benchmark's
// metrics, to compare between commits with benchstat. It fails when a fault scenario loses or
// duplicates something.
func BenchmarkLoad(b *testing.B) {
	cfg := config{N: 500, Clients: 16, Unrelated: 10000, PhaseChanges: 100, PhaseRounds: 3, Applies: 200, Idle: 60 * time.Second}
	var res *results
	for b.Loop() {
		r, err := run(b.Context(), cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		res = r
	}
	if res.failed() {
		b.Fatal("a fault scenario lost or duplicated something")
	}
	b.ReportMetric(res.Ratio, "x-direct")
	b.ReportMetric(res.RatioWithIdentity, "x-direct-with-identity")
	b.ReportMetric(res.WritesPerCR, "writes/CR")
	b.ReportMetric(res.EventsPerCR, "events/CR")
	b.ReportMetric(res.NoopReconciles, "noop-reconciles")
	b.ReportMetric(res.PhaseP99ms, "phase-p99-ms")
	b.ReportMetric(res.DirectPhaseP99ms, "direct-phase-p99-ms")
	b.ReportMetric(res.ApplyP99ms, "apply-p99-ms")
	b.ReportMetric(res.DirectApplyP99ms, "direct-apply-p99-ms")
	b.ReportMetric(float64(res.IdleWrites), "idle-writes")
	b.ReportMetric(res.RSSMiB, "rss-MiB")
	b.ReportMetric(res.Failover.DownSeconds, "failover-s")
}
