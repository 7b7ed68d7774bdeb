package cli

import (
	"flag"
	"fmt"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manager"
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
	var leaseFormat string
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
	fl.BoolVar(&opts.LeaderElection, "leader-elect", true, "elect a leader among replicas, so that one reconciles at a time")
	fl.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader lease (default: the pod's, or default outside a cluster)")
	fl.Int64Var(&opts.Compile.ProvisioningDeadlineSeconds, "provisioning-deadline-seconds", opts.Compile.ProvisioningDeadlineSeconds, "activeDeadlineSeconds of Provisioning Workflows")
	fl.Int64Var(&opts.Compile.SoftwareDeadlineSeconds, "software-deadline-seconds", opts.Compile.SoftwareDeadlineSeconds, "activeDeadlineSeconds of Software Workflows")
	addOptionFlagsTo(fl, &opts.Compile, &leaseFormat)
	logFlags := flag.NewFlagSet("log", flag.ContinueOnError)
	zapOpts.BindFlags(logFlags)
	fl.AddGoFlagSet(logFlags)
	return cmd
}
