// Package manager builds the controller manager: the scheme, the cache restricted to our
// Workflows, the three reconcilers, health checks and metrics. The CLI's `run` and the
// integration tests both start it through New.
package manager

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/controller"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/scheme"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
)

// Options configure the manager.
type Options struct {
	MetricsBindAddress     string
	HealthProbeBindAddress string
	LeaderElection         bool
	// LeaderElectionNamespace holds the lease; empty: the pod's namespace in a cluster,
	// "default" outside one.
	LeaderElectionNamespace string
	// Compile are the compiler's options for this site (images, service account, leases).
	Compile compile.Options
	// SkipNameValidation lets one process build several managers (integration tests that
	// stop and start the controller).
	SkipNameValidation bool
}

// LeaderElectionID names the lease replicas compete for.
const LeaderElectionID = "bpa-workflow-controller.bpa.akraino.org"

// New builds a manager with the three reconcilers registered.
func New(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	ns := opts.LeaderElectionNamespace
	if ns == "" && opts.LeaderElection {
		ns = inClusterNamespace()
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme.New(),
		Cache:                   controller.CacheOptions(),
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: ns,
		// Release the lease on a clean stop so a new replica takes over at once.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: ptr.To(opts.SkipNameValidation)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := (&controller.ProvisioningReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorderFor("bpa-workflow-controller"),
		Options:   opts.Compile,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the Provisioning controller: %w", err)
	}
	if err := (&controller.SoftwareReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorderFor("bpa-workflow-controller"),
		Options:  opts.Compile,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the Software controller: %w", err)
	}
	if err := (&controller.ClusterReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorderFor("bpa-workflow-controller"),
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the Cluster controller: %w", err)
	}
	return mgr, nil
}

func inClusterNamespace() string {
	raw, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil || len(raw) == 0 {
		return "default"
	}
	return string(raw)
}
