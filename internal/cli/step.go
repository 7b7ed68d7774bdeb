package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/fetchkubeconfig"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveclusterhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveleases"
)

// crFlags are the flags by which a compiled step names its CR in the cluster.
type crFlags struct {
	namespace, name, uid string
	generation           int64
}

func (f *crFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.namespace, "namespace", "", "namespace of the CR (in cluster)")
	cmd.Flags().StringVar(&f.name, "name", "", "name of the CR (in cluster)")
	cmd.Flags().StringVar(&f.uid, "uid", "", "uid of the CR (in cluster)")
	cmd.Flags().Int64Var(&f.generation, "generation", 0, "generation the Workflow was compiled from (in cluster)")
}

func notBuiltYet(step string) error {
	return fmt.Errorf("step %s: reading its inputs from the cluster is not built yet; give them as files (see --help)", step)
}

func newStepCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "step NAME",
		Short: "Run one step of a compiled Workflow (what a workflow pod runs)",
	}
	cmd.AddCommand(newDiscoverHostsStep(), newResolveLeasesStep(), newRenderInventoryStep())
	for _, name := range []string{fetchkubeconfig.Name, resolveclusterhosts.Name, installsoftware.Name} {
		cmd.AddCommand(newUnbuiltStep(name))
	}
	return cmd
}

func newDiscoverHostsStep() *cobra.Command {
	var cr crFlags
	var crFile, hostsFile, output string
	cmd := &cobra.Command{
		Use:   discoverhosts.Name + " --cr FILE --hosts FILE --output FILE",
		Short: "Place a Provisioning's entries on BareMetalHosts; write the placed hosts as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if crFile == "" {
				return notBuiltYet(discoverhosts.Name)
			}
			p, err := manifest.Provisioning(crFile)
			if err != nil {
				return err
			}
			hosts, err := manifest.BareMetalHosts(hostsFile)
			if err != nil {
				return err
			}
			placed, err := discoverhosts.Place(p, hosts)
			if err != nil {
				if placement.IsRetryable(err) {
					return fmt.Errorf("retryable: %w", err)
				}
				return err
			}
			return writeJSON(cmd.OutOrStdout(), output, placed)
		},
	}
	cr.add(cmd)
	cmd.Flags().StringVar(&crFile, "cr", "", "file holding the Provisioning")
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "file of BareMetalHosts")
	cmd.Flags().StringVar(&output, "output", "", "where to write the placed hosts (JSON; default stdout)")
	return cmd
}

func newResolveLeasesStep() *cobra.Command {
	var cr crFlags
	var hostsFile, leaseFile, leaseFormat, bmhFile, output string
	cmd := &cobra.Command{
		Use:   resolveleases.Name + " --hosts FILE (--leases FILE | --bmh FILE) --output FILE",
		Short: "Give every placed host the IP of its MAC, from a lease file or the BareMetalHosts' NICs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if leaseFile == "" && bmhFile == "" {
				return notBuiltYet(resolveleases.Name)
			}
			placed, err := readPlacements(hostsFile)
			if err != nil {
				return err
			}
			var src leases.Source
			if leaseFile != "" {
				src, err = addressSource(leaseFile, leaseFormat, nil)
			} else {
				hosts, herr := manifest.BareMetalHosts(bmhFile)
				if herr != nil {
					return herr
				}
				src = leases.NewHostSource(hosts)
			}
			if err != nil {
				return err
			}
			addressed, err := leases.Resolve(placed, src)
			if err != nil {
				return fmt.Errorf("retryable: %w", err)
			}
			return writeJSON(cmd.OutOrStdout(), output, addressed)
		},
	}
	cr.add(cmd)
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "placed hosts, as discover-hosts wrote them (required)")
	cmd.Flags().StringVar(&leaseFile, "leases", "", "DHCP lease file")
	cmd.Flags().StringVar(&leaseFormat, "lease-format", "", "isc or dnsmasq (default: detected)")
	cmd.Flags().StringVar(&bmhFile, "bmh", "", "file of BareMetalHosts, whose NIC IPs to use without a lease file")
	cmd.Flags().StringVar(&output, "output", "", "where to write the addressed hosts (JSON; default stdout)")
	_ = cmd.MarkFlagRequired("hosts")
	return cmd
}

func newRenderInventoryStep() *cobra.Command {
	var cr crFlags
	var crFile, hostsFile, outputDir string
	cmd := &cobra.Command{
		Use:   renderinventory.Name + " --cr FILE --hosts FILE --output-dir DIR",
		Short: "Render kubespray's inventory and extra variables for the addressed hosts",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if crFile == "" {
				return notBuiltYet(renderinventory.Name)
			}
			p, err := manifest.Provisioning(crFile)
			if err != nil {
				return err
			}
			placed, err := readPlacements(hostsFile)
			if err != nil {
				return err
			}
			inventory, extraVars, err := renderinventory.Render(p, placed)
			if err != nil {
				return err
			}
			if err := writeFileAtomic(filepath.Join(outputDir, renderinventory.InventoryFile), inventory); err != nil {
				return err
			}
			return writeFileAtomic(filepath.Join(outputDir, renderinventory.ExtraVarsFile), extraVars)
		},
	}
	cr.add(cmd)
	cmd.Flags().StringVar(&crFile, "cr", "", "file holding the Provisioning")
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "addressed hosts, as resolve-leases wrote them (required)")
	cmd.Flags().StringVar(&outputDir, "output-dir", ".", "directory to write "+renderinventory.InventoryFile+" and "+renderinventory.ExtraVarsFile+" into")
	_ = cmd.MarkFlagRequired("hosts")
	return cmd
}

// newUnbuiltStep accepts the compiled step's flags and fails saying the step is not built.
func newUnbuiltStep(name string) *cobra.Command {
	return &cobra.Command{
		Use:                name,
		Short:              "Not built yet: arrives with the steps' runtime",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("step %s is not built yet", name)
		},
	}
}

func readPlacements(path string) ([]placement.Placement, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []placement.Placement
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, errors.New(path + ": no hosts")
	}
	return out, nil
}

func writeJSON(stdout io.Writer, path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	raw = append(raw, '\n')
	if path == "" {
		_, err = stdout.Write(raw)
		return err
	}
	return writeFileAtomic(path, raw)
}
