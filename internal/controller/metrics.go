package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics served on the manager's metrics endpoint, beside controller-runtime's own.
var (
	workflowsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bpa_workflows_created_total",
		Help: "Workflows created, by CR kind.",
	}, []string{"kind"})
	phaseTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bpa_workflow_phase_transitions_total",
		Help: "Changes of a CR's mirrored Workflow phase, by CR kind and new phase.",
	}, []string{"kind", "phase"})
	compileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bpa_compile_errors_total",
		Help: "CR generations the compiler refused, by CR kind.",
	}, []string{"kind"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "bpa_reconcile_duration_seconds",
		Help:    "Time one reconcile took, by CR kind.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	}, []string{"kind"})
)

func init() {
	metrics.Registry.MustRegister(workflowsCreated, phaseTransitions, compileErrors, reconcileDuration)
}
