package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/atomicfile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/sshexec"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checkleavingnodes"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Run asks each leaving node for its host key (no login: a dead node's key does not matter, and
// a live one's is checked by kubespray against the pin), writes the removal variables to
// output, and says what it chose in log and, when some node does not answer, in a Warning
// Event on the Provisioning. A node that answers with anything (a changed key, an error) is
// alive: only a node that does not answer at all (sshexec.NotAnswering) is taken for dead.
func Run(ctx context.Context, c client.Client, ref stepcmd.CRRef, hosts []bpav1.Node, leaving []string, port int, timeout time.Duration, output string, log io.Writer) error {
	p := &bpav1.Provisioning{}
	if err := stepcmd.Get(ctx, c, ref, p, "Provisioning"); err != nil {
		return err
	}
	var notAnswering []string
	for _, label := range leaving {
		i := slices.IndexFunc(hosts, func(n bpav1.Node) bool { return n.Label == label })
		if i < 0 || net.ParseIP(hosts[i].IP) == nil {
			return fmt.Errorf("leaving node %q has no address in the hosts file", label)
		}
		addr := net.JoinHostPort(hosts[i].IP, strconv.Itoa(port))
		_, err := sshexec.ScanHostKey(ctx, addr, nil, timeout)
		switch {
		case sshexec.NotAnswering(err):
			notAnswering = append(notAnswering, label)
			fmt.Fprintf(log, "node %q: %v\n", label, err)
		case err != nil:
			fmt.Fprintf(log, "node %q (%s) answers: %v\n", label, addr, err)
		default:
			fmt.Fprintf(log, "node %q (%s) answers\n", label, addr)
		}
	}
	summary := checkleavingnodes.Summary(leaving, notAnswering)
	fmt.Fprintln(log, summary)
	raw, err := json.Marshal(checkleavingnodes.Decide(notAnswering))
	if err != nil {
		return err
	}
	if err := atomicfile.Write(output, raw); err != nil {
		return err
	}
	if len(notAnswering) > 0 {
		// The Event is what an operator sees; failing to write it changes nothing of the removal.
		_ = stepcmd.RecordEvent(ctx, c, p, "bpa-"+checkleavingnodes.Name, corev1.EventTypeWarning, bpav1.EventUngracefulRemoval, summary)
	}
	return nil
}
