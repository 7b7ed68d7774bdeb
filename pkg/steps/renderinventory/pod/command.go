// Package pod is what the render-inventory step's pod runs: its command (`bpa-workflow-controller
// step render-inventory`) and the runtime that does its I/O. The compiler never imports it; the
// step's template and decisions are the package renderinventory, one folder up.
package pod

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/atomicfile"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/renderinventory"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/stepcmd"
)

// Command is the step as its pod runs it, and as `plan` runs it on files.
func Command() *cobra.Command {
	var cr stepcmd.CRFlags
	var crFile, hostsFile, outputDir, mirrorURL, kubesprayFiles, kubernetesVersion, controlPlane, etcd string
	cmd := &cobra.Command{
		Use:   renderinventory.Name + " (--namespace NS --name N --uid U --generation G | --cr FILE) --hosts FILE --output-dir DIR [--offline-mirror URL --offline-kubespray-files NAME:VERSION] [--kubernetes-version V] [--control-plane A,B --etcd A]",
		Short: "Render kubespray's inventory and extra variables for the addressed hosts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			placed, err := stepcmd.ReadHosts(hostsFile)
			if err != nil {
				return err
			}
			mirror, err := offlineMirror(mirrorURL, kubesprayFiles)
			if err != nil {
				return err
			}
			if (controlPlane == "") != (etcd == "") {
				return errors.New("--" + renderinventory.ControlPlaneFlag + " and --" + renderinventory.EtcdFlag + " go together")
			}
			opts := renderinventory.Options{Mirror: mirror, KubernetesVersion: kubernetesVersion,
				Groups: renderinventory.Groups{ControlPlane: stepcmd.List(controlPlane), Etcd: stepcmd.List(etcd)}}
			var inventory, extraVars []byte
			if crFile == "" {
				ref, c, err := cr.Connect()
				if err != nil {
					return err
				}
				if inventory, extraVars, err = Run(cmd.Context(), c, ref, placed, opts); err != nil {
					return err
				}
			} else {
				p, err := manifest.Provisioning(crFile)
				if err != nil {
					return err
				}
				if inventory, extraVars, err = renderinventory.Render(p, placed, opts); err != nil {
					return err
				}
			}
			if err := atomicfile.Write(filepath.Join(outputDir, renderinventory.InventoryFile), inventory); err != nil {
				return err
			}
			return atomicfile.Write(filepath.Join(outputDir, renderinventory.ExtraVarsFile), extraVars)
		},
	}
	cr.AddTo(cmd)
	cmd.Flags().StringVar(&crFile, "cr", "", "file holding the Provisioning")
	cmd.Flags().StringVar(&hostsFile, "hosts", "", "addressed hosts, as resolve-leases wrote them (required)")
	cmd.Flags().StringVar(&outputDir, "output-dir", ".", "directory to write "+renderinventory.InventoryFile+" and "+renderinventory.ExtraVarsFile+" into")
	cmd.Flags().StringVar(&mirrorURL, renderinventory.OfflineMirrorFlag, "", "offline mode: the site's mirror (the file server as the nodes reach it)")
	cmd.Flags().StringVar(&kubesprayFiles, renderinventory.OfflineKubesprayFilesFlag, "", "offline mode: the file set serving kubespray's files_repo, NAME:VERSION")
	cmd.Flags().StringVar(&kubernetesVersion, renderinventory.KubernetesVersionFlag, "", "the Kubernetes version the run installs or upgrades to (kube_version), as the controller planned it")
	cmd.Flags().StringVar(&controlPlane, renderinventory.ControlPlaneFlag, "", "kube_control_plane's hosts in order, comma-separated, as the controller planned them for a cluster that exists (default: the masters among the hosts)")
	cmd.Flags().StringVar(&etcd, renderinventory.EtcdFlag, "", "etcd's hosts in order, comma-separated, with --"+renderinventory.ControlPlaneFlag+" (default: the first odd number of masters)")
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
