package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/spf13/cobra"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubespraydownloads"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
)

// Plan is what `plan -o json` prints.
type Plan struct {
	Cluster   string     `json:"cluster"`
	Hosts     []PlanHost `json:"hosts"`
	Inventory string     `json:"inventory"`
	// Downloads are what kubespray will fetch (with --kubespray), every node's together.
	Downloads []kubespraydownloads.Download `json:"downloads,omitempty"`
}

// PlanHost is a node as the plan's published output names it: the CLI contract (DESIGN.md)
// calls the entry's label "name", where the API's status calls it "label".
type PlanHost struct {
	Label         string          `json:"name"`
	Role          bpav1.NodeRoles `json:"role"`
	BareMetalHost string          `json:"bareMetalHost"`
	MAC           string          `json:"mac"`
	IP            string          `json:"ip,omitempty"`
}

type planFlags struct {
	file, hosts, leases, leaseFormat, output string
	kubespray, offlineMirror, offlineFiles   string
}

func newPlanCommand() *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "plan -f PROVISIONING.yaml --hosts BMH.yaml [--leases FILE] [--kubespray DIR [--offline-mirror URL --offline-kubespray-files NAME:VERSION]] [-o json|text]",
		Short: "Run discover-hosts, resolve-leases and render-inventory offline on files",
		Long: `Run discover-hosts, resolve-leases and render-inventory offline on files.

With --kubespray (a kubespray tree, and ansible-playbook on the PATH), also list every file and
image kubespray will fetch for the run, as its own download role says: what list-kubespray-
downloads lists in an offline Workflow, and what the site's mirror must hold. With
--offline-mirror, the run is rendered in offline mode, as the controller's --offline-mirror
renders it. No node is contacted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := runPlan(cmd.Context(), f)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "file holding one Provisioning (required)")
	cmd.Flags().StringVar(&f.hosts, "hosts", "", "file of BareMetalHosts, with status (required)")
	cmd.Flags().StringVar(&f.leases, "leases", "", "DHCP lease file; without it, IPs come from the BareMetalHosts' NICs")
	cmd.Flags().StringVar(&f.leaseFormat, "lease-format", "", "isc or dnsmasq (default: detected from the file)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "json", "output format: json or text")
	cmd.Flags().StringVar(&f.kubespray, "kubespray", "", "kubespray's tree: list what it will fetch (runs ansible-playbook from the PATH there)")
	cmd.Flags().StringVar(&f.offlineMirror, "offline-mirror", "", "offline mode: the site's mirror as the nodes reach it, http(s)://HOST[:PORT]")
	cmd.Flags().StringVar(&f.offlineFiles, "offline-kubespray-files", "", "offline mode: the file set serving kubespray's files_repo, NAME:VERSION (required with --offline-mirror)")
	_ = cmd.MarkFlagRequired("file")
	_ = cmd.MarkFlagRequired("hosts")
	return cmd
}

func runPlan(ctx context.Context, f *planFlags) ([]byte, error) {
	if f.output != "json" && f.output != "text" {
		return nil, fmt.Errorf("--output %q: want json or text", f.output)
	}
	var mirror *offline.Mirror
	if f.offlineMirror != "" || f.offlineFiles != "" {
		set, err := offline.ParseFileSet(f.offlineFiles)
		if err != nil {
			return nil, fmt.Errorf("--offline-kubespray-files %q: %w", f.offlineFiles, err)
		}
		mirror = &offline.Mirror{URL: f.offlineMirror, KubesprayFiles: set}
		if err := mirror.Validate(); err != nil {
			return nil, fmt.Errorf("--offline-mirror: %w", err)
		}
	}
	p, err := manifest.Provisioning(f.file)
	if err != nil {
		return nil, err
	}
	hosts, err := manifest.BareMetalHosts(f.hosts)
	if err != nil {
		return nil, err
	}
	placed, err := discoverhosts.Place(p, hosts)
	if err != nil {
		return nil, err
	}
	src, err := addressSource(f.leases, f.leaseFormat, hosts)
	if err != nil {
		return nil, err
	}
	addressed, err := leases.Resolve(placed, src)
	if err != nil {
		return nil, err
	}
	inventory, extraVars, err := renderinventory.Render(p, addressed, renderinventory.Options{Mirror: mirror, KubernetesVersion: p.Spec.KubernetesVersion})
	if err != nil {
		return nil, err
	}
	plan := Plan{Cluster: p.Labels[bpav1.ClusterLabel], Inventory: string(inventory)}
	if f.kubespray != "" {
		if plan.Downloads, err = kubespraydownloads.List(ctx, f.kubespray, inventory, extraVars); err != nil {
			return nil, fmt.Errorf("--kubespray: %w", err)
		}
	}
	for _, h := range addressed {
		plan.Hosts = append(plan.Hosts, PlanHost(h))
	}
	if f.output == "json" {
		raw, err := json.MarshalIndent(plan, "", "  ")
		return append(raw, '\n'), err
	}
	return planText(plan), nil
}

func planText(plan Plan) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "Cluster %s\n\n", plan.Cluster)
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tBAREMETALHOST\tMAC\tIP")
	for _, h := range plan.Hosts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.Label, h.Role, h.BareMetalHost, h.MAC, h.IP)
	}
	_ = tw.Flush()
	fmt.Fprintf(&buf, "\nInventory:\n%s", plan.Inventory)
	if len(plan.Downloads) > 0 {
		fmt.Fprintf(&buf, "\nkubespray fetches %d files and images:\n", len(plan.Downloads))
		tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tFILE OR IMAGE")
		for _, d := range plan.Downloads {
			fmt.Fprintf(tw, "%s\t%s\n", d.Name, d.URL+d.Image)
		}
		_ = tw.Flush()
	}
	return buf.Bytes()
}

// addressSource is the lease file when one is given, else the BareMetalHosts' NICs.
func addressSource(path, format string, hosts []metal3v1alpha1.BareMetalHost) (leases.Source, error) {
	if path == "" {
		return leases.NewHostSource(hosts), nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f leases.Format
	if format == "" {
		f = leases.Detect(raw)
	} else if f, err = leases.ParseFormat(format); err != nil {
		return nil, fmt.Errorf("--lease-format: %w", err)
	}
	table, err := leases.Parse(f, bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s (%s format): %w", path, f, err)
	}
	return leases.FileSource{Table: table, Name: path, Now: time.Now()}, nil
}
