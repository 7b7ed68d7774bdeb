package controller_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manager"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
)

func installArgs(wf *wfv1.Workflow) string {
	for _, tmpl := range wf.Spec.Templates {
		if tmpl.Name == installsoftware.Name && tmpl.Container != nil {
			return strings.Join(tmpl.Container.Args, " ")
		}
	}
	return ""
}

// xyzWithBinary makes cluster-xyz Ready in ns, then creates its Software asking the masters for
// binary tool.
func xyzWithBinary(t *testing.T, ns string) *bpav1.Software {
	t.Helper()
	p := loadProvisioning(t, "provisioning-cluster-xyz-resources.yaml", ns)
	create(t, p)
	provisioned(t, waitWorkflow(t, bpav1.WorkflowKindProvisioning, p, 1), xyzHosts)
	waitReady(t, p, 1)
	sw := loadSoftware(t, ns)
	sw.Spec.MasterBinaries = []bpav1.BinaryPackage{{Name: "tool"}}
	create(t, sw)
	return sw
}

func uploadBinary(t *testing.T, c *siteregistry.Client, name, version string) string {
	t.Helper()
	data := make([]byte, 4096)
	_, _ = rand.Read(data)
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pushed, err := c.PushFile(ctx, artifacts.Ref{Kind: artifacts.Binary, Name: name, Version: version}, path, siteregistry.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pushed.File.Digest.String()
}

// installedBinary drives a Software Workflow to Succeeded: each node reports its packages, and
// the masters the binary at the given version and digest.
func installedBinary(t *testing.T, wf *wfv1.Workflow, version, digest string, nodes ...bpav1.Node) {
	t.Helper()
	now := time.Now()
	all := []wfv1.NodeStatus{node(wf.Name, "resolve-cluster-hosts", wfv1.NodeSucceeded, now.Add(-2*time.Second), nil)}
	for i, n := range nodes {
		r := installsoftware.Report{Node: n.Label, Role: n.Role, PackageManager: "apt", Unchanged: []string{"curl=7.88.1-10"}}
		if n.Role.Has(bpav1.RoleMaster) {
			r.Binaries = []installsoftware.Binary{{NodeBinary: bpav1.NodeBinary{Name: "tool", Version: version, Digest: digest, Path: "/usr/local/bin/tool"}, Changed: true}}
		}
		all = append(all, node(wf.Name, "install-software", wfv1.NodeSucceeded, now.Add(time.Duration(i)*time.Millisecond), reportJSON(t, r)))
	}
	succeed(t, wf, all...)
}

// TestNewUploadRunsOnlyTheStaleNodes: a Software with an unpinned binary follows the site
// registry (the real one, TLS and authentication): it waits while nothing is uploaded, installs
// the newest version, records each node's digest, and after a new upload runs again only on the
// nodes whose file differs; the workers, without the binary, are left alone.
func TestNewUploadRunsOnlyTheStaleNodes(t *testing.T) {
	reg := testregistry.StartSecure(t)
	client, err := siteregistry.New(siteregistry.Config{Registry: reg.Addr, Username: reg.Username, Password: reg.Password, CAFile: reg.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	startManagerWith(t, env.Config, func(o *manager.Options) {
		o.Registry = client
		o.RegistryPollInterval = 300 * time.Millisecond
		o.Compile.SiteRegistry = reg.Addr
	})

	sw := xyzWithBinary(t, ns)
	eventually(t, "BinariesUnresolved while nothing is uploaded", func() error {
		cur := getSoftware(t, sw)
		if err := expectConditions(cur.Status.Conditions, 1, "False/BinariesUnresolved", "True/BinariesUnresolved", "absent"); err != nil {
			return err
		}
		if !strings.Contains(cur.Status.Conditions[0].Message, "binary tool") {
			return fmt.Errorf("message %q does not name the binary", cur.Status.Conditions[0].Message)
		}
		return nil
	})
	if n := len(workflowsOf(t, bpav1.WorkflowKindSoftware, sw)); n != 0 {
		t.Fatalf("%d Workflows before the binary is uploaded", n)
	}

	v1 := uploadBinary(t, client, "tool", "1.0")
	first := swWorkflow(t, sw, 1, compile.WorkflowScopeAll)
	if args := installArgs(first); !strings.Contains(args, "--registry="+reg.Addr) || !strings.Contains(args, "--binary-digest=master:tool="+v1) {
		t.Errorf("install-software runs %q, without the site registry or the file the run is named for", args)
	}
	installedBinary(t, first, "1.0", v1, xyzHosts...)
	cur := waitSoftwareReady(t, sw, 1)
	for _, n := range cur.Status.Nodes {
		if strings.HasPrefix(n.Node, "master") && (len(n.Binaries) != 1 || n.Binaries[0].Digest != v1 || n.Binaries[0].Version != "1.0") {
			t.Errorf("node %s binaries %+v, want tool 1.0 %s", n.Node, n.Binaries, v1)
		}
	}

	// A new upload: the masters' file differs, the workers have none.
	v2 := uploadBinary(t, client, "tool", "1.1")
	second := swWorkflow(t, sw, 1, compile.Scope([]string{"master-1", "master-2"}))
	if args := installArgs(second); !strings.Contains(args, "--binary-digest=master:tool="+v2) {
		t.Errorf("the run for the new upload runs %q, not named for its file %s", args, v2)
	}
	installedBinary(t, second, "1.1", v2, xyzHosts[:2]...)
	waitSoftwareReady(t, sw, 1)
	consistently(t, "no run once every node has the new file", time.Second, func() error {
		if n := len(workflowsOf(t, bpav1.WorkflowKindSoftware, sw)); n != 2 {
			return fmt.Errorf("%d Software Workflows, want 2", n)
		}
		return nil
	})

	// Another upload: the same generation and the same nodes, yet a new run (the registry's
	// content names it), not the finished one shown again.
	v3 := uploadBinary(t, client, "tool", "1.2")
	var third *wfv1.Workflow
	eventually(t, "a third run for the masters", func() error {
		for _, wf := range workflowsOf(t, bpav1.WorkflowKindSoftware, sw) {
			if wf.Name != first.Name && wf.Name != second.Name {
				third = wf.DeepCopy()
				return nil
			}
		}
		return fmt.Errorf("none yet")
	})
	if third.Labels[bpav1.WorkflowScopeLabel] != compile.Scope([]string{"master-1", "master-2"}) {
		t.Errorf("the third run's scope is %s", third.Labels[bpav1.WorkflowScopeLabel])
	}
	installedBinary(t, third, "1.2", v3, xyzHosts[:2]...)
	waitSoftwareReady(t, sw, 1)
}

// TestAStalledRegistryHoldsNoWorker: a site registry that accepts connections and never
// answers costs a reconcile its deadline, not a worker: the Software says BinariesUnresolved,
// and the other CRs go on.
func TestAStalledRegistryHoldsNoWorker(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, conn) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	stalled, err := siteregistry.New(siteregistry.Config{Registry: l.Addr().String(), PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	startManagerWith(t, env.Config, func(o *manager.Options) {
		o.Registry = stalled
		o.RegistryTimeout = time.Second
		o.MaxConcurrentReconciles = 1 // one worker: held, nothing else would run
		o.Compile.SiteRegistry = l.Addr().String()
	})
	sw := xyzWithBinary(t, ns)
	eventually(t, "BinariesUnresolved once the registry's deadline passes", func() error {
		cur := getSoftware(t, sw)
		if len(cur.Status.Conditions) == 0 || !strings.Contains(cur.Status.Conditions[0].Message, "context deadline exceeded") {
			return fmt.Errorf("conditions %+v", cur.Status.Conditions)
		}
		return expectConditions(cur.Status.Conditions, 1, "False/BinariesUnresolved", "True/BinariesUnresolved", "absent")
	})
	// The one worker is free: a second Software (no binaries) of the cluster is handled.
	plain := loadSoftware(t, ns)
	plain.Name = "plain"
	create(t, plain)
	swWorkflow(t, plain, 1, compile.WorkflowScopeAll)
}
