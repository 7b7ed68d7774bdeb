package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/spf13/cobra"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
)

// Plan is what `plan -o json` prints.
type Plan struct {
	Cluster   string     `json:"cluster"`
	Hosts     []PlanHost `json:"hosts"`
	Inventory string     `json:"inventory"`
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
}

func newPlanCommand() *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "plan -f PROVISIONING.yaml --hosts BMH.yaml [--leases FILE] [-o json|text]",
		Short: "Run discover-hosts, resolve-leases and render-inventory offline on files",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := runPlan(f)
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
	_ = cmd.MarkFlagRequired("file")
	_ = cmd.MarkFlagRequired("hosts")
	return cmd
}

func runPlan(f *planFlags) ([]byte, error) {
	if f.output != "json" && f.output != "text" {
		return nil, fmt.Errorf("--output %q: want json or text", f.output)
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
	inventory, _, err := renderinventory.Render(p, addressed, nil)
	if err != nil {
		return nil, err
	}
	plan := Plan{Cluster: p.Labels[bpav1.ClusterLabel], Inventory: string(inventory)}
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
	return leases.FileSource{Table: table, Name: path}, nil
}
