package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// results are the figures of one run, printed as a table and as JSON.
type results struct {
	Config          config   `json:"config"`
	ControllerFlags []string `json:"controllerFlags"`

	DirectSeconds             float64 `json:"directSeconds"`
	DirectWithIdentitySeconds float64 `json:"directWithIdentitySeconds"`
	ControllerSeconds         float64 `json:"controllerSeconds"`
	Ratio                     float64 `json:"ratio"`
	RatioWithIdentity         float64 `json:"ratioWithIdentity"`

	BurstWrites         string  `json:"burstWrites"`
	WritesPerCR         float64 `json:"writesPerCR"`
	EventsPerCR         float64 `json:"eventsPerCR"`
	IdentityWritesPerCR float64 `json:"identityWritesPerCR"`
	RefusedWrites       int     `json:"refusedWrites"`
	BurstReconciles     float64 `json:"burstReconciles"`
	NoopReconciles      float64 `json:"noopReconciles"`

	ApplyP50ms float64 `json:"applyP50ms"`
	// KnownP50ms and KnownP99ms: a new generation of a cluster whose step identity exists.
	KnownP50ms float64 `json:"knownClusterP50ms"`
	KnownP99ms float64 `json:"knownClusterP99ms"`
	ApplyP99ms float64 `json:"applyP99ms"`
	// DirectApply*: the same applies, with the minimal writes made directly.
	DirectApplyP50ms float64 `json:"directApplyP50ms"`
	DirectApplyP99ms float64 `json:"directApplyP99ms"`
	PhaseP50ms       float64 `json:"phaseP50ms"`
	PhaseP99ms       float64 `json:"phaseP99ms"`
	// DirectPhase*: the same phase changes, mirrored by the least any controller must do.
	DirectPhaseP50ms float64 `json:"directPhaseP50ms"`
	DirectPhaseP99ms float64 `json:"directPhaseP99ms"`

	IdleWrites     int     `json:"idleWrites"`
	IdleReconciles float64 `json:"idleReconciles"`
	RSSMiB         float64 `json:"rssMiB"`
	PeakRSSMiB     float64 `json:"peakRssMiB"`

	Kill     *faultResult `json:"killMidBurst,omitempty"`
	Restart  *faultResult `json:"restartIdle,omitempty"`
	Crash    *faultResult `json:"controlPlaneCrash,omitempty"`
	Failover *faultResult `json:"leaderFailover,omitempty"`
	// Handover is how long after a clean stop of the leader another replica leads.
	Handover float64 `json:"handoverSeconds,omitempty"`
}

// faultResult is what a fault scenario left: CRs without their one Workflow and status,
// duplicate Workflows, writes, and how long things took.
type faultResult struct {
	Left            int     `json:"left"`
	Duplicates      int     `json:"duplicates"`
	Writes          int     `json:"writes,omitempty"`
	DownSeconds     float64 `json:"downSeconds,omitempty"`
	ConvergeSeconds float64 `json:"convergeSeconds"`
}

func (r *results) failed() bool {
	for _, f := range []*faultResult{r.Kill, r.Crash, r.Failover} {
		if f != nil && (f.Left > 0 || f.Duplicates > 0) {
			return true
		}
	}
	return false
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (h *harness) measure(ctx context.Context, cfg config, res *results, restarted *[]*exec.Cmd) error {
	n := cfg.N
	if err := h.namespace(ctx, "unrelated"); err != nil {
		return err
	}
	progress("creating %d unrelated Workflows", cfg.Unrelated)
	if err := h.unrelated(ctx, "unrelated", cfg.Unrelated); err != nil {
		return err
	}

	for _, b := range []struct {
		ns       string
		identity bool
		out      *float64
	}{{"direct", false, &res.DirectSeconds}, {"direct-identity", true, &res.DirectWithIdentitySeconds}} {
		if err := h.namespace(ctx, b.ns); err != nil {
			return err
		}
		progress("%d CRs from %d clients making the minimal writes directly (identity: %v)", n, cfg.Clients, b.identity)
		profiled := h.prof.start(ctx, b.ns, "")
		d, err := h.burst(ctx, b.ns, n, cfg.Clients, h.direct(b.identity))
		if err := errors.Join(err, profiled()); err != nil {
			return err
		}
		*b.out = d.Seconds()
		progress("  %d-th Workflow after %.2fs", n, d.Seconds())
		if !b.identity {
			progress("%d rounds of %d Workflows changing phase at once, mirrored directly", cfg.PhaseRounds, cfg.PhaseChanges)
			phase, err := h.phaseChangesMirroredDirectly(ctx, b.ns, cfg.PhaseRounds, cfg.PhaseChanges)
			if err != nil {
				return err
			}
			res.DirectPhaseP50ms, res.DirectPhaseP99ms = ms(percentile(phase, 50)), ms(percentile(phase, 99))
		}
		if err := h.clean(ctx, b.ns); err != nil {
			return err
		}
	}

	if err := h.namespace(ctx, "direct-latency"); err != nil {
		return err
	}
	progress("%d CRs applied one at a time, their minimal writes made directly", cfg.Applies)
	lat, err := h.applyLatency(ctx, "direct-latency", cfg.Applies, h.direct(false))
	if err != nil {
		return err
	}
	res.DirectApplyP50ms, res.DirectApplyP99ms = ms(percentile(lat, 50)), ms(percentile(lat, 99))
	if err := h.clean(ctx, "direct-latency"); err != nil {
		return err
	}

	progress("starting the controller %v", h.flags)
	ctl, err := h.startController(ctx, "controller")
	if err != nil {
		return err
	}
	defer func() { ctl.kill() }()

	if err := h.namespace(ctx, "latency"); err != nil {
		return err
	}
	progress("%d CRs applied one at a time", cfg.Applies)
	lat, err = h.applyLatency(ctx, "latency", cfg.Applies, h.create)
	if err != nil {
		return err
	}
	res.ApplyP50ms, res.ApplyP99ms = ms(percentile(lat, 50)), ms(percentile(lat, 99))
	progress("%d of those clusters changed one at a time (their identity in place)", cfg.Applies/2)
	lat, err = h.knownClusterLatency(ctx, "latency", cfg.Applies/2)
	if err != nil {
		return err
	}
	res.KnownP50ms, res.KnownP99ms = ms(percentile(lat, 50)), ms(percentile(lat, 99))

	if err := h.namespace(ctx, "burst"); err != nil {
		return err
	}
	if _, err := ctl.quiet(ctx, time.Second); err != nil {
		return err
	}
	before, err := ctl.reconciles()
	if err != nil {
		return err
	}
	offset, err := h.audit.end()
	if err != nil {
		return err
	}
	progress("%d CRs from %d clients through the controller", n, cfg.Clients)
	profiled := h.prof.start(ctx, "burst", ctl.pprof)
	d, err := h.burst(ctx, "burst", n, cfg.Clients, h.create)
	if err := errors.Join(err, profiled()); err != nil {
		return err
	}
	res.ControllerSeconds = d.Seconds()
	res.Ratio = res.ControllerSeconds / res.DirectSeconds
	res.RatioWithIdentity = res.ControllerSeconds / res.DirectWithIdentitySeconds
	progress("  %d-th Workflow after %.2fs: %.2fx the direct writes", n, d.Seconds(), res.Ratio)
	if left, dup, err := h.converged(ctx, "burst", bpav1.PhasePending, time.Minute); err != nil || left+dup > 0 {
		return fmt.Errorf("after the burst: %d CRs not mirrored, %d duplicate Workflows (%v)", left, dup, err)
	}
	if _, err := ctl.quiet(ctx, 3*time.Second); err != nil {
		return err
	}
	after, err := ctl.reconciles()
	if err != nil {
		return err
	}
	res.BurstReconciles = after - before
	res.NoopReconciles = res.BurstReconciles - float64(n)
	w, err := h.audit.since(offset, "burst")
	if err != nil {
		return err
	}
	res.BurstWrites = w.String()
	identity := w.byKind["create serviceaccounts"] + w.byKind["create roles"] + w.byKind["create rolebindings"] + w.byKind["create secrets"]
	res.IdentityWritesPerCR = float64(identity) / float64(n)
	res.EventsPerCR = float64(w.events()) / float64(n)
	res.WritesPerCR = float64(w.withoutEvents()-identity) / float64(n)
	res.RefusedWrites = w.refused
	progress("  writes: %s", w)

	progress("%d rounds of %d Workflows changing phase at once", cfg.PhaseRounds, cfg.PhaseChanges)
	profiled = h.prof.start(ctx, "phase", ctl.pprof) // the first rounds
	phase, err := h.phaseRounds(ctx, "burst", cfg.PhaseRounds, cfg.PhaseChanges, func() error {
		_, err := ctl.quiet(ctx, time.Second)
		return err
	})
	if err := errors.Join(err, profiled()); err != nil {
		return err
	}
	res.PhaseP50ms, res.PhaseP99ms = ms(percentile(phase, 50)), ms(percentile(phase, 99))

	progress("every Workflow succeeds")
	if err := h.succeedAll(ctx, "burst", "latency"); err != nil {
		return err
	}
	for _, ns := range []string{"burst", "latency"} {
		if left, dup, err := h.converged(ctx, ns, bpav1.PhaseSucceeded, 2*time.Minute); err != nil || left+dup > 0 {
			return fmt.Errorf("after success: %d CRs of %s not Ready, %d duplicate Workflows (%v)", left, ns, dup, err)
		}
	}
	if _, err := ctl.quiet(ctx, 3*time.Second); err != nil {
		return err
	}
	progress("counting the writes of the idle controller for %s", cfg.Idle)
	if offset, err = h.audit.end(); err != nil {
		return err
	}
	if before, err = ctl.reconciles(); err != nil {
		return err
	}
	if err := pause(ctx, cfg.Idle); err != nil {
		return err
	}
	if w, err = h.audit.since(offset); err != nil {
		return err
	}
	res.IdleWrites = w.total()
	if after, err = ctl.reconciles(); err != nil {
		return err
	}
	res.IdleReconciles = after - before
	if res.RSSMiB, res.PeakRSSMiB, err = ctl.rss(); err != nil {
		return err
	}
	if cfg.SkipFaults {
		return nil
	}
	if ctl, err = h.killMidBurst(ctx, cfg, ctl, res); err != nil {
		return err
	}
	if err := h.crash(ctx, cfg, res, restarted); err != nil {
		return err
	}
	ctl.kill()
	return h.failover(ctx, cfg, res)
}

// killMidBurst kills the controller (kill -9) halfway through a burst and starts it again:
// every CR gets its one Workflow. Then it kills the idle controller again, and measures how
// long the new one takes to be idle, and what it writes.
func (h *harness) killMidBurst(ctx context.Context, cfg config, ctl *controllerProcess, res *results) (*controllerProcess, error) {
	if err := h.namespace(ctx, "kill"); err != nil {
		return ctl, err
	}
	progress("fault: kill -9 of the controller halfway through a burst of %d", cfg.N)
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		for {
			left, _, err := h.check(ctx, "kill", bpav1.PhasePending)
			if err != nil || left <= cfg.N/2 {
				ctl.kill()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	errs := make(chan error, 1)
	go func() {
		errs <- parallel(ctx, cfg.N, cfg.Clients, func(ctx context.Context, i int) error { return h.create(ctx, h.provisioning("kill", i)) })
	}()
	<-killed
	ctl, err := h.startController(ctx, "controller-after-kill")
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := <-errs; err != nil {
		return ctl, err
	}
	left, dup, err := h.converged(ctx, "kill", bpav1.PhasePending, 2*time.Minute)
	if err != nil {
		return ctl, err
	}
	res.Kill = &faultResult{Left: left, Duplicates: dup, ConvergeSeconds: time.Since(start).Seconds()}
	progress("  %d CRs left behind, %d duplicates, converged %.2fs after the restart", left, dup, res.Kill.ConvergeSeconds)

	if _, err := ctl.quiet(ctx, 2*time.Second); err != nil {
		return ctl, err
	}
	progress("fault: kill -9 of the idle controller, and a restart")
	ctl.kill()
	offset, err := h.audit.end()
	if err != nil {
		return nil, err
	}
	start = time.Now()
	if ctl, err = h.startController(ctx, "controller-restarted"); err != nil {
		return nil, err
	}
	idle, err := ctl.quiet(ctx, 2*time.Second)
	if err != nil {
		return ctl, err
	}
	w, err := h.audit.since(offset)
	if err != nil {
		return ctl, err
	}
	res.Restart = &faultResult{Writes: w.total(), ConvergeSeconds: idle.Sub(start).Seconds()}
	progress("  idle %.2fs after the start, %d writes (%s)", res.Restart.ConvergeSeconds, w.total(), w)
	return ctl, nil
}

// crash kills etcd and kube-apiserver while the Workflows of 100 CRs run, starts them again,
// and lets the Workflows succeed: every CR converges.
func (h *harness) crash(ctx context.Context, cfg config, res *results, restarted *[]*exec.Cmd) error {
	const crs = 100
	if err := h.namespace(ctx, "crash"); err != nil {
		return err
	}
	if err := parallel(ctx, crs, cfg.Clients, func(ctx context.Context, i int) error { return h.create(ctx, h.provisioning("crash", i)) }); err != nil {
		return err
	}
	if left, dup, err := h.converged(ctx, "crash", bpav1.PhasePending, time.Minute); err != nil || left+dup > 0 {
		return fmt.Errorf("before the crash: %d CRs not mirrored, %d duplicates (%v)", left, dup, err)
	}
	if _, err := h.phaseChanges(ctx, "crash", 0, crs); err != nil {
		return err
	}
	progress("fault: kill -9 of etcd and kube-apiserver while %d Workflows run", crs)
	down, cmds, err := h.crashControlPlane(ctx)
	*restarted = cmds
	if err != nil {
		return err
	}
	start := time.Now()
	if err := h.succeedAll(ctx, "crash"); err != nil {
		return err
	}
	left, dup, err := h.converged(ctx, "crash", bpav1.PhaseSucceeded, 3*time.Minute)
	if err != nil {
		return err
	}
	res.Crash = &faultResult{Left: left, Duplicates: dup, DownSeconds: down.Seconds(), ConvergeSeconds: time.Since(start).Seconds()}
	progress("  API down %.2fs; %d CRs left behind, %d duplicates, all Ready %.2fs after the Workflows succeeded", down.Seconds(), left, dup, res.Crash.ConvergeSeconds)
	return nil
}

// failover runs two replicas with leader election, kills the leader (kill -9) and measures
// how long until the other leads; CRs created before and after get one Workflow each.
func (h *harness) failover(ctx context.Context, cfg config, res *results) error {
	const crs = 100
	if err := h.namespace(ctx, "ha"); err != nil {
		return err
	}
	progress("fault: two replicas with leader election; kill -9 of the leader")
	var replicas []*controllerProcess
	defer func() {
		for _, r := range replicas {
			r.kill()
		}
	}()
	for i := range 2 {
		r, err := h.startController(ctx, fmt.Sprintf("replica-%d", i), "--leader-elect=true", "--leader-election-namespace=default")
		if err != nil {
			return err
		}
		replicas = append(replicas, r)
	}
	leader, other, err := waitLeader(ctx, replicas)
	if err != nil {
		return err
	}
	if err := parallel(ctx, crs, cfg.Clients, func(ctx context.Context, i int) error { return h.create(ctx, h.provisioning("ha", i)) }); err != nil {
		return err
	}
	if left, dup, err := h.converged(ctx, "ha", bpav1.PhasePending, time.Minute); err != nil || left+dup > 0 {
		return fmt.Errorf("before the failover: %d CRs not mirrored, %d duplicates (%v)", left, dup, err)
	}
	leader.kill()
	replicas = []*controllerProcess{other}
	start := time.Now()
	if _, _, err := waitLeader(ctx, replicas); err != nil {
		return err
	}
	took := time.Since(start)
	if err := parallel(ctx, crs, cfg.Clients, func(ctx context.Context, i int) error { return h.create(ctx, h.provisioning("ha", crs+i)) }); err != nil {
		return err
	}
	left, dup, err := h.converged(ctx, "ha", bpav1.PhasePending, time.Minute)
	if err != nil {
		return err
	}
	res.Failover = &faultResult{Left: left, Duplicates: dup, DownSeconds: took.Seconds(), ConvergeSeconds: time.Since(start).Seconds()}
	progress("  the other replica led %.2fs after the kill; %d CRs left behind, %d duplicates", took.Seconds(), left, dup)

	// A clean stop (a rollout, a drained node) releases the lease: the next replica leads at once.
	next, err := h.startController(ctx, "replica-2", "--leader-elect=true", "--leader-election-namespace=default")
	if err != nil {
		return err
	}
	replicas = append(replicas, next)
	start = time.Now()
	if err := other.stop(); err != nil {
		return fmt.Errorf("stopping the leader: %w", err)
	}
	if _, _, err := waitLeader(ctx, []*controllerProcess{next}); err != nil {
		return err
	}
	res.Handover = time.Since(start).Seconds()
	progress("  after a clean stop of the leader, the next led %.2fs later", res.Handover)
	return nil
}

// waitLeader waits until one of the replicas leads, and returns it and another.
func waitLeader(ctx context.Context, replicas []*controllerProcess) (leader, other *controllerProcess, err error) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		for i, r := range replicas {
			if r.leader() {
				return r, replicas[(i+1)%len(replicas)], nil
			}
		}
		if err := pause(ctx, 20*time.Millisecond); err != nil {
			return nil, nil, err
		}
	}
	return nil, nil, fmt.Errorf("no replica led within 2 minutes")
}

func (r *results) print(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(measure, target, value string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", measure, target, value) }
	row("measure", "target", "measured")
	row("-------", "------", "--------")
	row(fmt.Sprintf("%d CRs -> Workflows, controller / direct minimal writes", r.Config.N), "<= 1.25",
		fmt.Sprintf("%.2f (%.2fs / %.2fs)", r.Ratio, r.ControllerSeconds, r.DirectSeconds))
	row("  ... / direct writes with the step identity", "", fmt.Sprintf("%.2f (%.2fs)", r.RatioWithIdentity, r.DirectWithIdentitySeconds))
	row("writes per CR at creation (finalizer, run start, Workflow, status)", "4", fmt.Sprintf("%.2f", r.WritesPerCR))
	row("Events per CR at creation", "<= 1", fmt.Sprintf("%.2f", r.EventsPerCR))
	row("step identity writes per CR (one per new cluster)", "", fmt.Sprintf("%.2f; refused %d", r.IdentityWritesPerCR, r.RefusedWrites))
	row("no-op reconciles after a burst", "0", fmt.Sprintf("%.0f (%.0f reconciles for %d CRs)", r.NoopReconciles, r.BurstReconciles, r.Config.N))
	row(fmt.Sprintf("%d simultaneous phase changes -> status, p99 of %d rounds", r.Config.PhaseChanges, r.Config.PhaseRounds), "< 250 ms", fmt.Sprintf("%.1f ms (p50 %.1f)", r.PhaseP99ms, r.PhaseP50ms))
	row("  ... mirrored directly (a watch, one status patch)", "", fmt.Sprintf("%.1f ms (p50 %.1f)", r.DirectPhaseP99ms, r.DirectPhaseP50ms))
	row("apply -> Workflow, a new cluster, p50", "< 250 ms", fmt.Sprintf("%.1f ms (p99 %.1f)", r.ApplyP50ms, r.ApplyP99ms))
	row("new generation -> Workflow, a known cluster, p50", "< 50 ms", fmt.Sprintf("%.1f ms (p99 %.1f)", r.KnownP50ms, r.KnownP99ms))
	row("  ... the minimal writes made directly", "", fmt.Sprintf("%.1f ms (p50 %.1f)", r.DirectApplyP99ms, r.DirectApplyP50ms))
	row(fmt.Sprintf("idle writes, %d Succeeded CRs, %s", r.Config.N+r.Config.Applies, r.Config.Idle), "0", fmt.Sprintf("%d (%.0f reconciles)", r.IdleWrites, r.IdleReconciles))
	row(fmt.Sprintf("RSS, %d CRs + %d unrelated Workflows", r.Config.N+r.Config.Applies, r.Config.Unrelated), "< 150 MiB", fmt.Sprintf("%.0f MiB (peak %.0f)", r.RSSMiB, r.PeakRSSMiB))
	if f := r.Kill; f != nil {
		row("fault: kill -9 mid-burst", "0 lost, 0 duplicates", fmt.Sprintf("%d lost, %d duplicates; converged %.2fs after restart", f.Left, f.Duplicates, f.ConvergeSeconds))
	}
	if f := r.Restart; f != nil {
		row("fault: kill -9 of the idle controller", "0 writes", fmt.Sprintf("%d writes; idle %.2fs after start", f.Writes, f.ConvergeSeconds))
	}
	if f := r.Crash; f != nil {
		row("fault: etcd + kube-apiserver kill -9, 100 running", "0 lost, 0 duplicates", fmt.Sprintf("%d lost, %d duplicates; API down %.2fs; all Ready %.2fs after success", f.Left, f.Duplicates, f.DownSeconds, f.ConvergeSeconds))
	}
	if f := r.Failover; f != nil {
		row("fault: two replicas, leader kill -9", "0 lost, 0 duplicates", fmt.Sprintf("%d lost, %d duplicates; failover %.2fs (clean stop: %.2fs)", f.Left, f.Duplicates, f.DownSeconds, r.Handover))
	}
	_ = tw.Flush()
	fmt.Fprintln(out, strings.Repeat("-", 20))
}
