package cli

import (
	"bytes"
	"encoding/json"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/compile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/workflows"
)

type compileFlags struct {
	file, output string
	opts         compile.Options
	leaseFormat  string
}

func newCompileCommand() *cobra.Command {
	plugins, err := workflows.Plugins()
	if err != nil {
		panic(fmt.Sprintf("the embedded WorkflowTemplates are broken: %v", err))
	}
	f := &compileFlags{opts: compile.DefaultOptions(plugins)}
	cmd := &cobra.Command{
		Use:   "compile -f CR.yaml [-o yaml|json|mermaid|dot]",
		Short: "Print the Argo Workflow of every Provisioning and Software in a file, or a picture of its DAG",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := runCompile(f)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "file of Provisioning and Software CRs (required)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "yaml", "output format: yaml or json (the Workflows), mermaid or dot (a picture of each Workflow's DAG: Mermaid's flowchart, Graphviz's dot)")
	addOptionFlags(cmd, &f.opts, &f.leaseFormat)
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func addOptionFlags(cmd *cobra.Command, opts *compile.Options, leaseFormat *string) {
	addOptionFlagsTo(cmd.Flags(), opts, leaseFormat)
}

func addOptionFlagsTo(fl *pflag.FlagSet, opts *compile.Options, leaseFormat *string) {
	fl.StringVar(&opts.StepImage, "step-image", opts.StepImage, "image that runs the steps (bpa-workflow-controller step)")
	fl.StringVar(&opts.SiteRegistry, "site-registry", "", "the site registry (host[:port][/prefix]) a Software's binaries come from; empty: binaries are refused")
	fl.StringVar(&opts.SiteRegistrySecret, "site-registry-secret", opts.SiteRegistrySecret, "Secret in each CR namespace with the site registry's account (username, password) and CA (ca.crt), for install-software")
	fl.BoolVar(&opts.Offline, "offline", false, "offline mode for the Provisionings that do not set spec.offline (needs --offline-mirror)")
	fl.StringVar(&opts.OfflineMirror, "offline-mirror", "", "the site's mirror for offline mode: the file server (serve-files) as the nodes reach it, http(s)://HOST[:PORT]")
	fl.StringVar(&opts.OfflineKubesprayFiles, "offline-kubespray-files", "", "offline mode: the file set serving kubespray's files_repo, NAME:VERSION (default kubespray:TAG, the kubespray image's tag)")
	fl.StringVar(&opts.OfflineKUDManifests, "offline-kud-manifests", "", "offline mode: the file set holding each KUD plugin's manifest as PLUGIN.yaml, NAME:VERSION")
	fl.StringVar(&opts.KubesprayImage, "kubespray-image", opts.KubesprayImage, "default kubespray image")
	fl.StringSliceVar(&opts.HostNamespaces, "host-namespaces", nil, "namespaces, besides its own, a Provisioning may take BareMetalHosts from (comma-separated)")
	fl.StringSliceVar(&opts.AllowedKubesprayImages, "allowed-kubespray-images", nil, "other kubespray images a Provisioning may name in spec.kubespray.image (comma-separated)")
	fl.StringVar(&opts.LeaseFile, "lease-file", "", "the DHCP server's lease file on the node (host path); empty: IPs from BareMetalHost NICs")
	fl.StringVar(leaseFormat, "lease-format", "isc", "format of --lease-file: isc or dnsmasq")
	fl.StringToStringVar(&opts.LeaseNodeSelector, "lease-node-selector", nil, "node labels of the DHCP server's node, where --lease-file is (key=value,...)")
	fl.StringVar(&opts.SSHKeySecret, "ssh-key-secret", "", "SSH key Secret of CRs naming none in spec.ssh.secretRef (default: <cluster>-ssh-key)")
	fl.StringVar(&opts.KubectlImage, "kubectl-image", opts.KubectlImage, "image the KUD plugin pods run kubectl from")
	fl.Int32Var(&opts.Retention.SuccessSeconds, "workflow-ttl-after-success-seconds", opts.Retention.SuccessSeconds, "how long Argo keeps a Workflow that succeeded (ttlStrategy); 0 keeps it (runs are recorded in the CRs, so deleting them loses nothing)")
	fl.Int32Var(&opts.Retention.FailureSeconds, "workflow-ttl-after-failure-seconds", opts.Retention.FailureSeconds, "how long Argo keeps a Workflow that failed, for argo retry (ttlStrategy); 0 keeps it")
	fl.Var(podGCFlag{&opts.Retention.PodGC}, "pod-gc", "when Argo deletes a run's pods (podGC strategy: OnPodSuccess, OnPodCompletion, OnWorkflowSuccess, OnWorkflowCompletion); empty: with the Workflow")
}

// podGCFlag is --pod-gc: one of Argo's podGC strategies, checked with the other options.
type podGCFlag struct{ s *wfv1.PodGCStrategy }

func (f podGCFlag) String() string {
	if f.s == nil {
		return ""
	}
	return string(*f.s)
}
func (f podGCFlag) Set(v string) error { *f.s = wfv1.PodGCStrategy(v); return nil }
func (f podGCFlag) Type() string       { return "strategy" }

func runCompile(f *compileFlags) ([]byte, error) {
	switch f.output {
	case "yaml", "json", compile.PictureMermaid, compile.PictureDot:
	default:
		return nil, fmt.Errorf("--output %q: want yaml, json, %s or %s", f.output, compile.PictureMermaid, compile.PictureDot)
	}
	if f.opts.LeaseFile != "" {
		format, err := leases.ParseFormat(f.leaseFormat)
		if err != nil {
			return nil, fmt.Errorf("--lease-format: %w", err)
		}
		f.opts.LeaseFormat = format
	}
	docs, err := manifest.ReadFile(f.file)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	compiled := 0
	for _, d := range docs {
		var wf *wfv1.Workflow
		switch cr := d.Object.(type) {
		case *bpav1.Provisioning:
			wf, err = compile.Provisioning(cr, f.opts)
		case *bpav1.Software:
			wf, err = compile.Software(cr, f.opts)
		default:
			continue // Clusters and hosts compile to nothing
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", f.file, d.Index, err)
		}
		switch f.output {
		case compile.PictureMermaid, compile.PictureDot:
			picture, err := compile.Draw(wf, f.output)
			if err != nil {
				return nil, err
			}
			out.Write(picture)
		default:
			if err := encode(&out, f.output, wf, compiled); err != nil {
				return nil, err
			}
		}
		compiled++
	}
	if compiled == 0 {
		return nil, fmt.Errorf("%s: no Provisioning or Software to compile", f.file)
	}
	return out.Bytes(), nil
}

// encode writes YAML documents separated by ---, or one JSON object a line.
func encode(out *bytes.Buffer, format string, obj any, index int) error {
	if format == "json" {
		raw, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		out.Write(raw)
		out.WriteByte('\n')
		return nil
	}
	raw, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	if index > 0 {
		out.WriteString("---\n")
	}
	out.Write(raw)
	return nil
}
