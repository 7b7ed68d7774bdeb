package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/controller"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manager"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/workflows"
)

func newRunCommand() *cobra.Command {
	plugins, err := workflows.Plugins()
	if err != nil {
		panic(fmt.Sprintf("the embedded WorkflowTemplates are broken: %v", err))
	}
	opts := manager.Options{Compile: compile.DefaultOptions(plugins)}
	var leaseFormat, registryCA string
	zapOpts := zap.Options{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the controller manager (the default); KUBECONFIG or in-cluster config says where",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Compile.LeaseFile != "" {
				format, err := leases.ParseFormat(leaseFormat)
				if err != nil {
					return fmt.Errorf("--lease-format: %w", err)
				}
				opts.Compile.LeaseFormat = format
			}
			if err := compile.ValidateOptions(opts.Compile); err != nil {
				return err
			}
			if err := validateRunOptions(opts); err != nil {
				return err
			}
			ui, err := controller.ParseArgoUI(opts.ArgoUI)
			if err != nil {
				return err
			}
			opts.ArgoUI = ui
			if opts.Compile.SiteRegistry != "" {
				// Its account comes from the environment (the chart's Secret), never a flag.
				reg, err := siteregistry.New(siteregistry.Config{
					Registry: opts.Compile.SiteRegistry, CAFile: registryCA,
					Username: os.Getenv(siteregistry.EnvUsername), Password: os.Getenv(siteregistry.EnvPassword),
				})
				if err != nil {
					return fmt.Errorf("--site-registry: %w", err)
				}
				opts.Registry = reg
			}
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts), zap.WriteTo(cmd.ErrOrStderr())))
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return fmt.Errorf("finding the cluster: %w", err)
			}
			mgr, err := manager.New(cfg, opts)
			if err != nil {
				return err
			}
			return mgr.Start(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", ":8080", "address the Prometheus metrics are served on; 0 disables them")
	fl.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "address /healthz and /readyz are served on; 0 disables them")
	fl.StringVar(&opts.PprofBindAddress, "pprof-bind-address", "0", "address Go's /debug/pprof profiles are served on, for `make load -profile`; 0 (the default) disables them: they are for diagnosis, not for a site")
	fl.BoolVar(&opts.LeaderElection, "leader-elect", true, "elect a leader among replicas, so that one reconciles at a time")
	fl.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader lease (default: the pod's, or default outside a cluster)")
	fl.Int64Var(&opts.Compile.ProvisioningDeadlineSeconds, "provisioning-deadline-seconds", opts.Compile.ProvisioningDeadlineSeconds, "activeDeadlineSeconds of Provisioning Workflows")
	fl.Int64Var(&opts.Compile.SoftwareDeadlineSeconds, "software-deadline-seconds", opts.Compile.SoftwareDeadlineSeconds, "activeDeadlineSeconds of Software Workflows")
	fl.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", DefaultMaxConcurrentReconciles, "CRs of one kind reconciled at once (one CR is never reconciled twice at once)")
	fl.Float32Var(&opts.KubeAPIQPS, "kube-api-qps", 0, "client-side limit of requests per second to the API server; 0: none, the API server's priority and fairness governs")
	fl.IntVar(&opts.KubeAPIBurst, "kube-api-burst", 0, "client-side limit of requests in a burst, with --kube-api-qps")
	fl.DurationVar(&opts.ArgoPollInterval, "argo-poll-interval", manager.DefaultArgoPollInterval, "how often to ask whether Argo Workflows is installed, while it is not")
	fl.StringVar(&opts.ArgoUI, "argo-ui-url", "", "address of Argo's UI (https://host[:port][/base-href]): each CR's status.workflowURL links its Workflow there; empty: no links")
	fl.StringVar(&registryCA, "site-registry-ca-file", "", "PEM CA the site registry's certificate chains to (default: the system's); its account from $"+siteregistry.EnvUsername+" and $"+siteregistry.EnvPassword)
	fl.DurationVar(&opts.RegistryPollInterval, "site-registry-poll-interval", controller.DefaultRegistryPollInterval, "how often a Software with binaries looks for new uploads in the site registry")
	fl.DurationVar(&opts.RegistryTimeout, "site-registry-timeout", controller.DefaultRegistryTimeout, "how long a reconcile waits for the site registry to resolve a Software's binaries, so that a registry that stalls holds no worker")
	addOptionFlagsTo(fl, &opts.Compile, &leaseFormat)
	logFlags := flag.NewFlagSet("log", flag.ContinueOnError)
	zapOpts.BindFlags(logFlags)
	fl.AddGoFlagSet(logFlags)
	return cmd
}

// DefaultMaxConcurrentReconciles is measured with `make load` on a 2-core machine
// (docs/performance.md): a new cluster's reconcile waits about 200 ms for the API server's
// RBAC escalation checks of its Role and RoleBinding, so 8 workers made a burst of 500 new
// clusters 1.3 times slower than 16; past 16, the API server is what a burst waits for.
const DefaultMaxConcurrentReconciles = 16

func validateRunOptions(opts manager.Options) error {
	switch {
	case opts.MaxConcurrentReconciles < 1:
		return fmt.Errorf("--max-concurrent-reconciles: %d: must be at least 1", opts.MaxConcurrentReconciles)
	case opts.KubeAPIQPS < 0:
		return fmt.Errorf("--kube-api-qps: %g: must be 0 (no client-side limit) or more", opts.KubeAPIQPS)
	case opts.KubeAPIBurst < 0:
		return fmt.Errorf("--kube-api-burst: %d: must be 0 or more", opts.KubeAPIBurst)
	case opts.KubeAPIQPS > 0 && opts.KubeAPIBurst < 1:
		return errors.New("--kube-api-burst: must be at least 1 with --kube-api-qps")
	case opts.ArgoPollInterval < 100*time.Millisecond:
		return fmt.Errorf("--argo-poll-interval: %s: must be at least 100ms", opts.ArgoPollInterval)
	case opts.RegistryPollInterval < time.Second:
		return fmt.Errorf("--site-registry-poll-interval: %s: must be at least 1s", opts.RegistryPollInterval)
	}
	return nil
}
