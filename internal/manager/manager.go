// Package manager builds the controller manager: the scheme, the cache restricted to our
// Workflows, the three reconcilers, health checks and metrics. The CLI's `run` and the
// integration tests both start it through New.
package manager

import (
	"fmt"
	"net/http"
	"os"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
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
	// PprofBindAddress serves Go's profiles (/debug/pprof); "" or "0" serves none.
	PprofBindAddress string
	LeaderElection   bool
	// LeaderElectionNamespace holds the lease; empty: the pod's namespace in a cluster,
	// "default" outside one.
	LeaderElectionNamespace string
	// Compile are the compiler's options for this site (images, service account, leases).
	Compile compile.Options
	// SkipNameValidation lets one process build several managers (integration tests that
	// stop and start the controller).
	SkipNameValidation bool
	// MaxConcurrentReconciles is how many CRs of one kind are reconciled at once; 0 is
	// controller-runtime's 1. One CR is never reconciled twice at once.
	MaxConcurrentReconciles int
	// KubeAPIQPS and KubeAPIBurst bound the client's requests to the API server; 0 keeps the
	// config's (controller-runtime's: no client-side limit, the API server's priority and
	// fairness governs).
	KubeAPIQPS   float32
	KubeAPIBurst int
	// ArgoPollInterval is how often the controller asks whether Argo Workflows is installed,
	// while it is not; 0 is DefaultArgoPollInterval.
	ArgoPollInterval time.Duration
	// Registry resolves a Software's binaries in the site registry (Compile.SiteRegistry);
	// nil: Software naming binaries are refused.
	Registry controller.BinaryResolver
	// RegistryPollInterval is how often a Software with binaries looks for new uploads; 0:
	// controller.DefaultRegistryPollInterval.
	RegistryPollInterval time.Duration
	// RegistryTimeout bounds the site registry's answers in a reconcile; 0:
	// controller.DefaultRegistryTimeout.
	RegistryTimeout time.Duration
	// ArgoUI is the address of Argo's UI (ParseArgoUI's); "": the status links no Workflow.
	ArgoUI string
	// PodLogs reads the kubespray step's log for its progress; nil: through the API server.
	PodLogs controller.PodLogs
	// Clock spaces those reads; nil: time.Now.
	Clock func() time.Time
}

// DefaultArgoPollInterval is how often a controller started without Argo Workflows asks
// whether it is installed yet.
const DefaultArgoPollInterval = 10 * time.Second

// LeaderElectionID names the lease replicas compete for.
const LeaderElectionID = "bpa-workflow-controller.bpa.akraino.org"

// New builds a manager with the three reconcilers registered.
func New(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	ns := opts.LeaderElectionNamespace
	if ns == "" && opts.LeaderElection {
		ns = inClusterNamespace()
	}
	cfg = rest.CopyConfig(cfg)
	if opts.KubeAPIQPS > 0 {
		cfg.QPS = opts.KubeAPIQPS
	}
	if opts.KubeAPIQPS > 0 && opts.KubeAPIBurst > 0 {
		cfg.Burst = opts.KubeAPIBurst
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the discovery client: %w", err)
	}
	interval := opts.ArgoPollInterval
	if interval <= 0 {
		interval = DefaultArgoPollInterval
	}
	argo, err := controller.NewArgoAPI(disco, interval)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme.New(),
		Cache:                   controller.CacheOptions(),
		MapperProvider:          mapperKnowingWorkflows,
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		PprofBindAddress:        opts.PprofBindAddress,
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
	if err := mgr.Add(argo); err != nil {
		return nil, err
	}
	if opts.PodLogs == nil {
		core, err := corev1client.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("creating the client for pod logs: %w", err)
		}
		opts.PodLogs = controller.ClientPodLogs{Client: core}
	}
	if err := setupReconcilers(mgr, argo, opts); err != nil {
		return nil, err
	}
	return mgr, nil
}

// setupReconcilers adds the three reconcilers to mgr.
func setupReconcilers(mgr ctrl.Manager, argo *controller.ArgoAPI, opts Options) error {
	if err := (&controller.ProvisioningReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorderFor("bpa-workflow-controller"),
		Options:   opts.Compile,
		Argo:      argo,

		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		Logs:                    opts.PodLogs,
		Clock:                   opts.Clock,
		ArgoUI:                  opts.ArgoUI,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Provisioning controller: %w", err)
	}
	if err := (&controller.SoftwareReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorderFor("bpa-workflow-controller"),
		Options:  opts.Compile,
		Argo:     argo,
		Registry: opts.Registry,
		ArgoUI:   opts.ArgoUI,

		RegistryPollInterval:    opts.RegistryPollInterval,
		RegistryTimeout:         opts.RegistryTimeout,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Software controller: %w", err)
	}
	if err := (&controller.ClusterReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorderFor("bpa-workflow-controller"),

		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Cluster controller: %w", err)
	}
	return nil
}

// mapperKnowingWorkflows is the API server's REST mapper, which also knows Argo's Workflow kind
// while the API server does not serve it yet: the cache restricted to our Workflows is set up
// at start either way, and its informer starts once Argo is installed (controller.ArgoAPI).
func mapperKnowingWorkflows(cfg *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
	served, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, err
	}
	known := meta.NewDefaultRESTMapper([]schema.GroupVersion{wfv1.SchemeGroupVersion})
	known.Add(wfv1.WorkflowSchemaGroupVersionKind, meta.RESTScopeNamespace)
	return meta.FirstHitRESTMapper{MultiRESTMapper: meta.MultiRESTMapper{served, known}}, nil
}

func inClusterNamespace() string {
	raw, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil || len(raw) == 0 {
		return "default"
	}
	return string(raw)
}
