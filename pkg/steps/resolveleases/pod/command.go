// Package pod is what the resolve-leases step's pod runs: its command (`bpa-workflow-controller
// step resolve-leases`) and the runtime that does its I/O. The compiler never imports it; the
// step's template and decisions are the package resolveleases, one folder up.
package pod

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/resolveleases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Command is the step as its pod runs it, and as `plan` runs it on files.
func Command() *cobra.Command {
	var cr stepcmd.CRFlags
	var hostsFile, leaseFile, leaseFormat, bmhFile, output string
	cmd := &cobra.Command{
		Use:   resolveleases.Name + " [--namespace NS --name N --uid U --generation G] --hosts FILE [--leases FILE | --bmh FILE] --output FILE",
		Short: "Give every placed host the IP of its MAC, from a lease file or the BareMetalHosts' NICs (in cluster, checking the CR; offline with --bmh)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			placed, err := stepcmd.ReadHosts(hostsFile)
			if err != nil {
				return err
			}
			format, err := optionalFormat(leaseFormat)
			if err != nil {
				return err
			}
			if cr.Namespace == "" && cr.Name == "" && leaseFile != "" {
				// Offline, on files (as plan does): no CR to check.
				addressed, err := ReadLeaseFile(placed, leaseFile, format)
				if err != nil {
					return err
				}
				return stepcmd.WriteJSON(cmd.OutOrStdout(), output, addressed)
			}
			if bmhFile == "" {
				ref, c, err := cr.Connect()
				if err != nil {
					return err
				}
				addressed, err := Run(cmd.Context(), c, ref, placed, leaseFile, format)
				if err != nil {
					return err
				}
				return stepcmd.WriteJSON(cmd.OutOrStdout(), output, addressed)
			}
			hosts, err := manifest.BareMetalHosts(bmhFile)
			if err != nil {
				return err
			}
			addressed, err := leases.Resolve(placed, leases.NewHostSource(hosts))
			if err != nil {
				return steps.Retryable(err)
			}
			return stepcmd.WriteJSON(cmd.OutOrStdout(), output, addressed)
		},
	}
	cr.AddTo(cmd)
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "placed hosts, as discover-hosts wrote them (required)")
	cmd.Flags().StringVar(&leaseFile, "leases", "", "DHCP lease file")
	cmd.Flags().StringVar(&leaseFormat, "lease-format", "", "isc or dnsmasq (default: detected)")
	cmd.Flags().StringVar(&bmhFile, "bmh", "", "file of BareMetalHosts, whose NIC IPs to use without a lease file")
	cmd.Flags().StringVar(&output, "output", "", "where to write the addressed hosts (JSON; default stdout)")
	_ = cmd.MarkFlagRequired("hosts")
	return cmd
}

func optionalFormat(format string) (leases.Format, error) {
	if format == "" {
		return "", nil
	}
	f, err := leases.ParseFormat(format)
	if err != nil {
		return "", fmt.Errorf("--lease-format: %w", err)
	}
	return f, nil
}
