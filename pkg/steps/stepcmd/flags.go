package stepcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/atomicfile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/scheme"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// CRFlags are the flags by which a compiled step names its CR in the cluster.
type CRFlags struct {
	Namespace, Name, UID string
	Generation           int64
}

// AddTo declares the flags on cmd.
func (f *CRFlags) AddTo(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.Namespace, "namespace", "", "namespace of the CR (in cluster)")
	cmd.Flags().StringVar(&f.Name, "name", "", "name of the CR (in cluster)")
	cmd.Flags().StringVar(&f.UID, "uid", "", "uid of the CR (in cluster)")
	cmd.Flags().Int64Var(&f.Generation, "generation", 0, "generation the Workflow was compiled from (in cluster)")
}

// Ref is the CR the flags name, checked.
func (f *CRFlags) Ref() (CRRef, error) {
	ref := CRRef{Namespace: f.Namespace, Name: f.Name, UID: f.UID, Generation: f.Generation}
	return ref, ref.Validate()
}

// Connect checks the CR flags and connects to the cluster: what every in-cluster step does
// first.
func (f *CRFlags) Connect() (CRRef, client.Client, error) {
	ref, err := f.Ref()
	if err != nil {
		return ref, nil, err
	}
	c, err := ClusterClient()
	return ref, c, err
}

// ClusterClient is the client of a step running in a pod (or wherever KUBECONFIG points).
func ClusterClient() (client.Client, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("finding the cluster: %w", err)
	}
	cfg.UserAgent = "bpa-workflow-controller-step"
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}

// CheckCluster fails when the Workflow's cluster parameter is not the CR's label any more.
func CheckCluster(ctx context.Context, c client.Reader, ref CRRef, cluster string) error {
	if cluster == "" {
		return nil
	}
	p := &bpav1.Provisioning{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, p); err != nil {
		return nil // the step reads the CR again and says what is wrong
	}
	if got := p.Labels[bpav1.ClusterLabel]; got != cluster {
		return fmt.Errorf("the Provisioning %s/%s now belongs to cluster %q; this Workflow was compiled for %q", ref.Namespace, ref.Name, got, cluster)
	}
	return nil
}

// List splits a comma-separated flag; empty is none.
func List(flag string) []string {
	if flag == "" {
		return nil
	}
	return strings.Split(flag, ",")
}

// SSHOptions say how a step reaches the nodes.
type SSHOptions struct {
	// KeyFile is the mounted private key.
	KeyFile string
	// Port of sshd on the nodes.
	Port int
	// Timeout bounds connecting and the handshake.
	Timeout time.Duration
}

// AddTo declares the SSH flags of the steps that log in to nodes.
func (o *SSHOptions) AddTo(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.KeyFile, "ssh-key", steps.SSHKeyPath, "the SSH private key (the mounted Secret)")
	o.AddPortTo(cmd)
}

// AddPortTo declares the flags of a step that reaches the nodes' sshd without logging in.
func (o *SSHOptions) AddPortTo(cmd *cobra.Command) {
	cmd.Flags().IntVar(&o.Port, "ssh-port", 22, "sshd's port on the nodes")
	cmd.Flags().DurationVar(&o.Timeout, "ssh-timeout", 20*time.Second, "bound on connecting and the SSH handshake")
}

// RetryableUnlessHostKey: a node that does not answer yet is worth waiting for; a changed
// host key, or one never pinned, is not.
func RetryableUnlessHostKey(err error) error {
	var changed *sshexec.HostKeyChangedError
	var unpinned *sshexec.NotPinnedError
	if errors.As(err, &changed) || errors.As(err, &unpinned) {
		return err
	}
	return steps.Retryable(err)
}

// WaitIfLost makes a failure the node's lost connection caused retryable: a node that reboots
// under the step (a power cut, an operator) comes back, and the step's next try converges.
func WaitIfLost(err error) error {
	if sshexec.Lost(err) {
		return steps.Retryable(err)
	}
	return err
}

// ReadHosts reads the hosts file a step hands on (discover-hosts, resolve-leases): a JSON list
// of bpav1.Node, strictly: an unknown field, a node without a label or with another role is
// refused, naming it.
func ReadHosts(path string) ([]bpav1.Node, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var out []bpav1.Node
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, errors.New(path + ": no hosts")
	}
	for i, n := range out {
		if n.Label == "" {
			return nil, fmt.Errorf("%s: node %d: no label", path, i)
		}
		if err := n.Role.Validate(); err != nil {
			return nil, fmt.Errorf("%s: node %q: %w", path, n.Label, err)
		}
	}
	return out, nil
}

// WriteJSON writes v as indented JSON to path, whole, or to stdout when path is empty.
func WriteJSON(stdout io.Writer, path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	raw = append(raw, '\n')
	if path == "" {
		_, err = stdout.Write(raw)
		return err
	}
	return atomicfile.Write(path, raw)
}
