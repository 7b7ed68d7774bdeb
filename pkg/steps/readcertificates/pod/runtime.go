package pod

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/readcertificates"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Run is what the Workflow says of the run it reads after: how to log in, kubeadm's path on
// the masters, and the nodes it removed (no longer masters of the cluster).
type Run struct {
	User    string
	Kubeadm string
	Leaving []string
}

// commandTimeout bounds kubeadm on one master: it reads files and, for its configuration, the
// cluster's API server.
const commandTimeout = 2 * time.Minute

// Read reads every master's certificates: on each, over SSH (the host key pinned, sudo when
// the user is not root), `kubeadm certs check-expiration -o json`, which lists what kubeadm
// manages without a key leaving the node. A master that cannot be read is said in its entry:
// the report is for the status, and never fails the run whose cluster it describes.
func Read(ctx context.Context, c client.Client, ref stepcmd.CRRef, hosts []bpav1.Node, run Run, opts stepcmd.SSHOptions) (readcertificates.Report, error) {
	p := &bpav1.Provisioning{}
	if err := stepcmd.GetIncarnation(ctx, c, ref, p, "Provisioning"); err != nil {
		return readcertificates.Report{}, err
	}
	cfg, err := opts.Login(c, p.Namespace, p.Labels[bpav1.ClusterLabel], run.User)
	if err != nil {
		return readcertificates.Report{}, err
	}
	command, err := stepcmd.RootCommand(run.User, run.Kubeadm, "certs", "check-expiration", "--output=json")
	if err != nil {
		return readcertificates.Report{}, err
	}
	var r readcertificates.Report
	for _, h := range hosts {
		if !h.Role.Has(bpav1.RoleMaster) || slices.Contains(run.Leaving, h.Label) {
			continue
		}
		m := bpav1.MasterCertificates{Node: h.Label}
		certs, err := readMaster(ctx, cfg, net.JoinHostPort(h.IP, strconv.Itoa(opts.Port)), command)
		if err != nil {
			m.Unreadable = readcertificates.Truncate(err.Error())
		}
		m.Certificates = certs
		r.Masters = append(r.Masters, m)
	}
	return r, nil
}

func readMaster(ctx context.Context, cfg sshexec.Config, addr, command string) ([]bpav1.CertificateExpiry, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	node, err := sshexec.Dial(ctx, cfg, addr)
	if err != nil {
		return nil, err
	}
	defer node.Close()
	raw, err := node.Run(ctx, command)
	if err != nil {
		if refused := sshexec.SudoRefused(err); refused != nil {
			return nil, refused
		}
		return nil, fmt.Errorf("kubeadm certs check-expiration: %w", err)
	}
	return readcertificates.ParseKubeadm(raw)
}
