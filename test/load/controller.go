package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
)

// controllerProcess is the controller binary running as its own process, as on a site: the
// harness reads its metrics endpoint and /proc, and kills it.
type controllerProcess struct {
	cmd     *exec.Cmd
	metrics string
	// pprof is where it serves Go's profiles; "" when it serves none.
	pprof  string
	exited chan error
	log    *os.File
	done   sync.Once
}

// startController runs the binary with the kubeconfig and extra flags, and waits until it
// serves /readyz; with profiled, it also serves Go's profiles.
func startController(ctx context.Context, binary, kubeconfig, logPath string, profiled bool, extra ...string) (*controllerProcess, error) {
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	probes, err := freeAddr()
	if err != nil {
		return nil, err
	}
	pprof := ""
	if profiled {
		if pprof, err = freeAddr(); err != nil {
			return nil, err
		}
		extra = append([]string{"--pprof-bind-address=" + pprof}, extra...)
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	args := append([]string{"run", "--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probes}, extra...)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &controllerProcess{cmd: cmd, metrics: metrics, pprof: pprof, exited: make(chan error, 1), log: log}
	go func() { c.exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get("http://" + probes + "/readyz")
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return c, nil
			}
		}
		select {
		case err := <-c.exited:
			return nil, fmt.Errorf("the controller exited before it was ready (%v); its log is %s", err, logPath)
		case <-ctx.Done():
			c.kill()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.kill()
			return nil, fmt.Errorf("the controller was not ready within 60s; its log is %s", logPath)
		}
	}
}

// kill is kill -9 (once: a killed process stays killed).
func (c *controllerProcess) kill() {
	c.done.Do(func() {
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		<-c.exited
		_ = c.log.Close()
	})
}

// stop is a clean stop (SIGTERM), as Kubernetes stops a pod.
func (c *controllerProcess) stop() error {
	err := errors.New("stopped already")
	c.done.Do(func() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-c.exited:
		case <-time.After(30 * time.Second):
			_ = c.cmd.Process.Signal(syscall.SIGKILL)
			<-c.exited
			err = errors.New("the controller did not stop within 30s of SIGTERM")
		}
		_ = c.log.Close()
	})
	return err
}

// rss is the process's resident set now and at its peak, in MiB (/proc/PID/status).
func (c *controllerProcess) rss() (now, peak float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			now = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return now, peak, sc.Err()
}

// metric sums a metric's samples whose labels include all of match.
func (c *controllerProcess) metric(name string, match map[string]string) (float64, error) {
	res, err := http.Get("http://" + c.metrics + "/metrics")
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	return sumMetric(res.Body, name, match)
}

func sumMetric(r io.Reader, name string, match map[string]string) (float64, error) {
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return 0, err
	}
	fam, ok := families[name]
	if !ok {
		return 0, nil
	}
	var sum float64
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range match {
			ok = ok && labels[k] == v
		}
		if !ok {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum, nil
}

// reconciles is the number of reconciles the three controllers have run.
func (c *controllerProcess) reconciles() (float64, error) {
	return c.metric("controller_runtime_reconcile_total", nil)
}

// queued is the depth of the three controllers' work queues.
func (c *controllerProcess) queued() (float64, error) {
	return c.metric("workqueue_depth", nil)
}

// leader reports whether the process holds the leader lease.
func (c *controllerProcess) leader() bool {
	v, err := c.metric("leader_election_master_status", nil)
	return err == nil && v == 1
}

// quiet waits until no reconcile has run for window with empty queues, and returns when the
// last one ran.
func (c *controllerProcess) quiet(ctx context.Context, window time.Duration) (time.Time, error) {
	last, lastChange := -1.0, time.Now()
	for {
		n, err := c.reconciles()
		if err != nil {
			return time.Time{}, err
		}
		depth, err := c.queued()
		if err != nil {
			return time.Time{}, err
		}
		if n != last || depth > 0 {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) >= window {
			return lastChange, nil
		}
		if err := pause(ctx, 20*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
