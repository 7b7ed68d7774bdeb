package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/scheme"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/steprun"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/leases"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/placement"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/discoverhosts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/fetchkubeconfig"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/installsoftware"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/pinhostkeys"
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

func (f *crFlags) ref() (steprun.CRRef, error) {
	ref := steprun.CRRef{Namespace: f.namespace, Name: f.name, UID: f.uid, Generation: f.generation}
	return ref, ref.Validate()
}

// connect checks the CR flags and connects to the cluster: what every in-cluster step does
// first.
func (f *crFlags) connect() (steprun.CRRef, client.Client, error) {
	ref, err := f.ref()
	if err != nil {
		return ref, nil, err
	}
	c, err := clusterClient()
	return ref, c, err
}

// list splits a comma-separated flag; empty is none.
func list(flag string) []string {
	if flag == "" {
		return nil
	}
	return strings.Split(flag, ",")
}

// clusterClient is the client of a step running in a pod (or wherever KUBECONFIG points).
func clusterClient() (client.Client, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("finding the cluster: %w", err)
	}
	cfg.UserAgent = "bpa-workflow-controller-step"
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}

func newStepCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "step NAME",
		Short: "Run one step of a compiled Workflow (what a workflow pod runs)",
	}
	cmd.AddCommand(newDiscoverHostsStep(), newResolveLeasesStep(), newRenderInventoryStep(), newPinHostKeysStep(),
		newFetchKubeconfigStep(), newResolveClusterHostsStep(), newInstallSoftwareStep())
	return cmd
}

// sshFlags are the flags of the steps that log in to nodes.
type sshFlags struct {
	keyFile string
	port    int
	timeout time.Duration
}

func (f *sshFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.keyFile, "ssh-key", steps.SSHKeyPath, "the SSH private key (the mounted Secret)")
	cmd.Flags().IntVar(&f.port, "ssh-port", 22, "sshd's port on the nodes")
	cmd.Flags().DurationVar(&f.timeout, "ssh-timeout", 20*time.Second, "bound on connecting and the SSH handshake")
}

func (f *sshFlags) options() steprun.SSHOptions {
	return steprun.SSHOptions{KeyFile: f.keyFile, Port: f.port, Timeout: f.timeout}
}

func newFetchKubeconfigStep() *cobra.Command {
	var cr crFlags
	var ssh sshFlags
	var cluster, hostsFile, adminConf, master, user, leaving string
	cmd := &cobra.Command{
		Use:   fetchkubeconfig.Name + " --namespace NS --name N --uid U --generation G --cluster C --hosts FILE --master LABEL",
		Short: "Over SSH, read the first master's admin.conf into Secret <cluster>-kubeconfig; write ConfigMap <cluster>-hosts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := cr.ref()
			if err != nil {
				return err
			}
			if !adminConfPath.MatchString(adminConf) {
				return fmt.Errorf("--admin-conf %q is not an absolute path", adminConf)
			}
			if !bpav1.IsSSHUser(user) {
				return fmt.Errorf("--ssh-user %q is not a user name", user)
			}
			placed, err := readPlacements(hostsFile)
			if err != nil {
				return err
			}
			c, err := clusterClient()
			if err != nil {
				return err
			}
			if err := checkCluster(cmd.Context(), c, ref, cluster); err != nil {
				return err
			}
			run := steprun.KubeconfigRun{Master: master, User: user, Leaving: list(leaving)}
			return steprun.FetchKubeconfig(cmd.Context(), c, ref, run, placed, adminConf, ssh.options())
		},
	}
	cr.add(cmd)
	ssh.add(cmd)
	cmd.Flags().StringVar(&cluster, "cluster", "", "the cluster the Workflow was compiled for (checked against the CR's label)")
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "addressed hosts, as resolve-leases wrote them (required)")
	cmd.Flags().StringVar(&adminConf, "admin-conf", steprun.DefaultAdminConf, "admin kubeconfig on the master")
	cmd.Flags().StringVar(&master, "master", "", "label of the first master, whose admin.conf is read (required)")
	cmd.Flags().StringVar(&user, "ssh-user", bpav1.DefaultSSHUser, "user to log in to the master as (sudo when not root)")
	cmd.Flags().StringVar(&leaving, "leaving", "", "comma-separated nodes the run removed (left out of <cluster>-hosts)")
	_ = cmd.MarkFlagRequired("hosts")
	_ = cmd.MarkFlagRequired("master")
	return cmd
}

func newPinHostKeysStep() *cobra.Command {
	var cr crFlags
	var cluster, hostsFile string
	var port int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   pinhostkeys.Name + " --namespace NS --name N --uid U --generation G --cluster C --hosts FILE",
		Short: "Pin every addressed node's SSH host key in Secret <cluster>-known-hosts, or check it against the pinned one, before kubespray connects",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			placed, err := readPlacements(hostsFile)
			if err != nil {
				return err
			}
			ref, c, err := cr.connect()
			if err != nil {
				return err
			}
			if err := checkCluster(cmd.Context(), c, ref, cluster); err != nil {
				return err
			}
			return steprun.PinHostKeys(cmd.Context(), c, ref, placed, port, timeout)
		},
	}
	cr.add(cmd)
	cmd.Flags().StringVar(&cluster, "cluster", "", "the cluster the Workflow was compiled for (checked against the CR's label)")
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "addressed hosts, as resolve-leases wrote them (required)")
	cmd.Flags().IntVar(&port, "ssh-port", 22, "sshd's port on the nodes")
	cmd.Flags().DurationVar(&timeout, "ssh-timeout", 20*time.Second, "bound on connecting and the SSH handshake")
	_ = cmd.MarkFlagRequired("hosts")
	return cmd
}

var adminConfPath = regexp.MustCompile(`^/[A-Za-z0-9._/-]+$`)

// checkCluster fails when the Workflow's cluster parameter is not the CR's label any more.
func checkCluster(ctx context.Context, c client.Reader, ref steprun.CRRef, cluster string) error {
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

func newResolveClusterHostsStep() *cobra.Command {
	var cr crFlags
	var only, output string
	cmd := &cobra.Command{
		Use:   resolveclusterhosts.Name + " --namespace NS --name N --uid U --generation G [--only a,b] --output FILE",
		Short: "List the cluster's nodes (ConfigMap <cluster>-hosts) as the JSON the install fan-out iterates over",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, c, err := cr.connect()
			if err != nil {
				return err
			}
			nodes, err := steprun.ResolveClusterHosts(cmd.Context(), c, ref, list(only))
			if err != nil {
				return err
			}
			return writeJSON(cmd.OutOrStdout(), output, nodes)
		},
	}
	cr.add(cmd)
	cmd.Flags().StringVar(&only, "only", "", "comma-separated nodes to list (day 2); default: all")
	cmd.Flags().StringVar(&output, "output", "", "where to write the nodes (JSON; default stdout)")
	return cmd
}

func newInstallSoftwareStep() *cobra.Command {
	var cr crFlags
	var ssh sshFlags
	var reg registryFlags
	var node, role, address, output string
	var digests map[string]string
	cmd := &cobra.Command{
		Use:   installsoftware.Name + " --namespace NS --name N --uid U --generation G --node N --role R --address IP --output FILE [--registry HOST --ca-file PEM --binary-digest ROLE:NAME=DIGEST...]",
		Short: "Over SSH, install or upgrade what differs from the Software on one node; write its report as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ref, err := cr.ref()
			if err != nil {
				return err
			}
			c, err := clusterClient()
			if err != nil {
				return err
			}
			// The site registry, for binaries; its account comes from the environment (the
			// pod's Secret), never a flag.
			var registry *siteregistry.Client
			if reg.registry != "" {
				if registry, err = reg.client(cmd.InOrStdin()); err != nil {
					return err
				}
			}
			report, runErr := steprun.InstallSoftware(cmd.Context(), c, ref, node, role, address, steprun.InstallOptions{
				SSH: ssh.options(), Registry: registry, Digests: digests,
			})
			// The report is written even when the step fails: it says which packages and why.
			if err := writeJSON(cmd.OutOrStdout(), output, report); err != nil {
				return errors.Join(runErr, err)
			}
			return runErr
		},
	}
	cr.add(cmd)
	ssh.add(cmd)
	cmd.Flags().StringVar(&node, "node", "", "the node's label")
	cmd.Flags().StringVar(&role, "role", "", "the node's role: master, worker or master,worker")
	cmd.Flags().StringVar(&address, "address", "", "the node's IP address")
	cmd.Flags().StringVar(&output, "output", "", "where to write the report (JSON; default stdout)")
	cmd.Flags().StringToStringVar(&digests, "binary-digest", nil, "the file a binary must be, as the controller resolved it when it named the run: role:name=sha256:<hex> (repeated); another file in the registry fails the step")
	reg.addTo(cmd.Flags())
	return cmd
}

func newDiscoverHostsStep() *cobra.Command {
	var cr crFlags
	var crFile, hostsFile, output, leaving string
	cmd := &cobra.Command{
		Use:   discoverhosts.Name + " (--namespace NS --name N --uid U --generation G | --cr FILE --hosts FILE) --output FILE",
		Short: "Place a Provisioning's entries on BareMetalHosts (claiming them, in cluster); write the placed hosts as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if crFile == "" {
				ref, c, err := cr.connect()
				if err != nil {
					return err
				}
				placed, err := steprun.DiscoverHosts(cmd.Context(), c, ref, list(leaving))
				if err != nil {
					return err
				}
				return writeJSON(cmd.OutOrStdout(), output, placed)
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
					return steps.Retryable(err)
				}
				return err
			}
			return writeJSON(cmd.OutOrStdout(), output, placed)
		},
	}
	cr.add(cmd)
	cmd.Flags().StringVar(&crFile, "cr", "", "file holding the Provisioning")
	cmd.Flags().StringVar(&leaving, "leaving", "", "comma-separated nodes a remove run takes out (added from the CR's status)")
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "file of BareMetalHosts")
	cmd.Flags().StringVar(&output, "output", "", "where to write the placed hosts (JSON; default stdout)")
	return cmd
}

func newResolveLeasesStep() *cobra.Command {
	var cr crFlags
	var hostsFile, leaseFile, leaseFormat, bmhFile, output string
	cmd := &cobra.Command{
		Use:   resolveleases.Name + " [--namespace NS --name N --uid U --generation G] --hosts FILE [--leases FILE | --bmh FILE] --output FILE",
		Short: "Give every placed host the IP of its MAC, from a lease file or the BareMetalHosts' NICs (in cluster, checking the CR; offline with --bmh)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			placed, err := readPlacements(hostsFile)
			if err != nil {
				return err
			}
			format, err := optionalFormat(leaseFormat)
			if err != nil {
				return err
			}
			if cr.namespace == "" && cr.name == "" && leaseFile != "" {
				// Offline, on files (as plan does): no CR to check.
				addressed, err := steprun.ReadLeaseFile(placed, leaseFile, format)
				if err != nil {
					return err
				}
				return writeJSON(cmd.OutOrStdout(), output, addressed)
			}
			if bmhFile == "" {
				ref, c, err := cr.connect()
				if err != nil {
					return err
				}
				addressed, err := steprun.ResolveLeases(cmd.Context(), c, ref, placed, leaseFile, format)
				if err != nil {
					return err
				}
				return writeJSON(cmd.OutOrStdout(), output, addressed)
			}
			hosts, err := manifest.BareMetalHosts(bmhFile)
			if err != nil {
				return err
			}
			addressed, err := leases.Resolve(placed, leases.NewHostSource(hosts))
			if err != nil {
				return steps.Retryable(err)
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
	var crFile, hostsFile, outputDir, mirrorURL, kubesprayFiles string
	cmd := &cobra.Command{
		Use:   renderinventory.Name + " (--namespace NS --name N --uid U --generation G | --cr FILE) --hosts FILE --output-dir DIR [--offline-mirror URL --offline-kubespray-files NAME:VERSION]",
		Short: "Render kubespray's inventory and extra variables for the addressed hosts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			placed, err := readPlacements(hostsFile)
			if err != nil {
				return err
			}
			mirror, err := offlineMirror(mirrorURL, kubesprayFiles)
			if err != nil {
				return err
			}
			var inventory, extraVars []byte
			if crFile == "" {
				ref, c, err := cr.connect()
				if err != nil {
					return err
				}
				if inventory, extraVars, err = steprun.RenderInventory(cmd.Context(), c, ref, placed, mirror); err != nil {
					return err
				}
			} else {
				p, err := manifest.Provisioning(crFile)
				if err != nil {
					return err
				}
				if inventory, extraVars, err = renderinventory.Render(p, placed, mirror); err != nil {
					return err
				}
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
	cmd.Flags().StringVar(&mirrorURL, renderinventory.OfflineMirrorFlag, "", "offline mode: the site's mirror (the file server as the nodes reach it)")
	cmd.Flags().StringVar(&kubesprayFiles, renderinventory.OfflineKubesprayFilesFlag, "", "offline mode: the file set serving kubespray's files_repo, NAME:VERSION")
	_ = cmd.MarkFlagRequired("hosts")
	return cmd
}

// offlineMirror is the mirror the offline flags name, or nil without them.
func offlineMirror(url, kubesprayFiles string) (*offline.Mirror, error) {
	if url == "" && kubesprayFiles == "" {
		return nil, nil
	}
	if url == "" || kubesprayFiles == "" {
		return nil, errors.New("--" + renderinventory.OfflineMirrorFlag + " and --" + renderinventory.OfflineKubesprayFilesFlag + " go together")
	}
	files, err := offline.ParseFileSet(kubesprayFiles)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", renderinventory.OfflineKubesprayFilesFlag, err)
	}
	m := &offline.Mirror{URL: url, KubesprayFiles: files}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("--%s: %w", renderinventory.OfflineMirrorFlag, err)
	}
	return m, nil
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
