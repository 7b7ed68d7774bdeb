package pod

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/reportnodes"
)

// Run reads the nodes of the cluster the kubeconfig file reaches, each request bounded by
// timeout. It does not fail: a kubeconfig not stored yet, or a cluster that does not answer, is
// said in the report.
func Run(ctx context.Context, kubeconfig string, timeout time.Duration) reportnodes.Report {
	c, host, err := Connect(kubeconfig, timeout)
	if err != nil {
		return reportnodes.Report{Unreadable: err.Error()}
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return reportnodes.Report{Unreadable: fmt.Sprintf("listing the nodes at %s: %v", host, err)}
	}
	return reportnodes.ReportOf(nodes.Items)
}

// Connect is a client of the cluster the kubeconfig file reaches, each request bounded by
// timeout, and the cluster's address; the error says when no kubeconfig is stored yet.
func Connect(kubeconfig string, timeout time.Duration) (kubernetes.Interface, string, error) {
	raw, err := os.ReadFile(kubeconfig) //nolint:gosec // G304: the kubeconfig Secret mounted read-only into the step
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", errors.New("no kubeconfig stored yet (fetch-kubeconfig has not run)")
	case err != nil:
		return nil, "", fmt.Errorf("the kubeconfig: %w", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return nil, "", fmt.Errorf("the kubeconfig: %w", err)
	}
	cfg.Timeout = timeout
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("the kubeconfig: %w", err)
	}
	return c, cfg.Host, nil
}
