// Command load measures the controller on the project's local control plane (a real etcd and
// kube-apiserver, no Argo: the harness plays Argo's part on the Workflows): a burst of CRs
// against the same writes made directly, the writes and reconciles each CR costs, status
// mirroring latency, idle writes, memory beside 10,000 unrelated Workflows; and faults: the
// controller killed mid-burst, etcd and kube-apiserver killed while Workflows run, two replicas
// with leader election. The controller runs as its own process, as built by `go build`; the
// API server's audit log counts its writes. It prints a table, and the figures as JSON.
//
//	go run ./test/load [-n 500] [-clients 16] [-idle 60s] [-json FILE] [-- controller flags]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/scheme"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testenv"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/workflows"
)

type harness struct {
	env *testenv.Env
	c   client.WithWatch
	// directClient makes the direct bursts' writes, and mirrors their phase changes, as
	// directUser.
	directClient client.WithWatch
	audit        auditLog
	dir          string
	binary       string
	kubeconfig   string
	flags        []string
	compile      compile.Options
	sample       *bpav1.Provisioning
	// prof profiles the bursts and the phase changes; nil without -profile.
	prof *profiler
}

func main() {
	var cfg config
	flag.IntVar(&cfg.N, "n", 500, "CRs in a burst")
	flag.IntVar(&cfg.Clients, "clients", 16, "concurrent clients making a burst")
	flag.IntVar(&cfg.Unrelated, "unrelated", 10000, "Workflows of other users on the site, beside the controller's")
	flag.IntVar(&cfg.PhaseChanges, "phase-changes", 100, "Workflows changing phase at once")
	flag.IntVar(&cfg.PhaseRounds, "phase-rounds", 3, "rounds of phase changes, each on other CRs of the burst (n >= rounds x phase-changes)")
	flag.IntVar(&cfg.Applies, "applies", 200, "CRs applied one at a time for the apply-to-Workflow latency")
	flag.DurationVar(&cfg.Idle, "idle", 60*time.Second, "how long to count the writes of an idle controller")
	flag.BoolVar(&cfg.SkipFaults, "skip-faults", false, "measure only, no fault scenarios")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the controllers' logs and the audit log (their directory is printed) after a run that passed, as after one that failed")
	flag.StringVar(&cfg.ProfileDir, "profile", "", "write CPU profiles of the API server and the controller during the first 4s of each burst and of the phase changes to this directory (NAME.apiserver.pprof, NAME.controller.pprof)")
	jsonOut := flag.String("json", "", "also write the figures to this file")
	flag.Parse()
	if cfg.PhaseRounds < 1 || cfg.N < cfg.PhaseRounds*cfg.PhaseChanges {
		fmt.Fprintf(os.Stderr, "load: -phase-rounds %d of -phase-changes %d need at least 1 round and -n >= %d\n", cfg.PhaseRounds, cfg.PhaseChanges, cfg.PhaseRounds*cfg.PhaseChanges)
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	res, err := run(ctx, cfg, flag.Args())
	if res != nil {
		res.print(os.Stdout)
		raw, _ := json.MarshalIndent(res, "", "  ")
		fmt.Println(string(raw))
		if *jsonOut != "" {
			if err := os.WriteFile(*jsonOut, append(raw, '\n'), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	if res.failed() {
		fmt.Fprintln(os.Stderr, "load: a fault scenario lost or duplicated something (see above)")
		os.Exit(1)
	}
}

type config struct {
	N, Clients, Unrelated, PhaseChanges, PhaseRounds, Applies int
	Idle                                                      time.Duration
	SkipFaults                                                bool
	Keep                                                      bool   `json:"-"`
	ProfileDir                                                string `json:",omitempty"`
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s load: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, cfg config, controllerFlags []string) (*results, error) {
	dir, err := os.MkdirTemp("", "bpa-load-")
	if err != nil {
		return nil, err
	}
	h := &harness{dir: dir, flags: controllerFlags, audit: auditLog{path: filepath.Join(dir, "audit.log")}}
	if err := h.setUp(ctx); err != nil {
		return nil, err
	}
	if cfg.ProfileDir != "" {
		if h.prof, err = newProfiler(cfg.ProfileDir, h.env.Config); err != nil {
			return nil, err
		}
	}
	var restarted []*exec.Cmd
	defer func() {
		for _, cmd := range restarted {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if err := h.env.Stop(); err != nil && len(restarted) == 0 {
			progress("stopping the control plane: %v", err)
		}
		if err == nil && !cfg.Keep {
			_ = os.RemoveAll(dir)
		} else {
			progress("the logs of the controller and the audit log are kept in %s", dir)
		}
	}()
	res := &results{Config: cfg, ControllerFlags: controllerFlags}
	err = h.measure(ctx, cfg, res, &restarted)
	return res, err
}

// setUp starts the audited control plane, builds the controller and writes its kubeconfig.
func (h *harness) setUp(ctx context.Context) error {
	policy := filepath.Join(h.dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	progress("starting etcd and kube-apiserver (audit log %s)", h.audit.path)
	env, err := testenv.StartAudited(policy, h.audit.path)
	if err != nil {
		return err
	}
	h.env = env
	admin := *env.Config
	admin.QPS, admin.Burst = 1000, 2000 // the harness's clients are never what is measured
	if h.c, err = client.NewWithWatch(&admin, client.Options{Scheme: scheme.New()}); err != nil {
		return err
	}
	// The controller holds what a site gives it, and no more: the generated ClusterRole and the
	// leader election Role, so the API server's RBAC checks (the escalation check of every
	// step Role and RoleBinding it writes) are part of what is measured.
	// The direct clients hold the same, and may create Provisionings: the writes they make
	// directly pass the same checks as the controller's.
	if err := grantControllerRole(ctx, h.c, "default", controllerUser, directUser); err != nil {
		return err
	}
	if err := grantCreate(ctx, h.c, directUser); err != nil {
		return err
	}
	direct, err := env.AddUser(envtest.User{Name: directUser}, nil)
	if err != nil {
		return err
	}
	directCfg := direct.Config()
	directCfg.QPS, directCfg.Burst = admin.QPS, admin.Burst
	if h.directClient, err = client.NewWithWatch(directCfg, client.Options{Scheme: scheme.New()}); err != nil {
		return err
	}
	user, err := env.AddUser(envtest.User{Name: controllerUser}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	h.kubeconfig = filepath.Join(h.dir, "controller.kubeconfig")
	if err := os.WriteFile(h.kubeconfig, kubeconfig, 0o600); err != nil {
		return err
	}
	h.binary = filepath.Join(testenv.RepoRoot(), "bin", "load", "bpa-workflow-controller")
	progress("building %s", h.binary)
	build := exec.CommandContext(ctx, "go", "build", "-o", h.binary, "./cmd/bpa-workflow-controller")
	build.Dir, build.Stdout, build.Stderr = testenv.RepoRoot(), os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the controller: %w", err)
	}
	plugins, err := workflows.Plugins()
	if err != nil {
		return err
	}
	h.compile = compile.DefaultOptions(plugins)
	h.sample, err = manifest.Provisioning(filepath.Join(testenv.RepoRoot(), "config", "samples", "provisioning-cluster-abc.yaml"))
	return err
}

// startController runs one controller process with the harness's flags.
func (h *harness) startController(ctx context.Context, name string, extra ...string) (*controllerProcess, error) {
	args := append([]string{"--leader-elect=false"}, h.flags...)
	if len(extra) > 0 {
		args = append(extra, h.flags...)
	}
	return startController(ctx, h.binary, h.kubeconfig, filepath.Join(h.dir, name+".log"), h.prof != nil, args...)
}
