package offline

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
)

var kubesprayFiles = artifacts.Ref{Kind: artifacts.FileSet, Name: "kubespray", Version: "v2.28.0"}

func TestKubesprayVars(t *testing.T) {
	for _, tc := range []struct {
		url, registry, base string
	}{
		{url: "http://10.10.0.2:30880", registry: "10.10.0.2:30880", base: "http://10.10.0.2:30880"},
		{url: "http://mirror.site.example", registry: "mirror.site.example:80", base: "http://mirror.site.example"},
		{url: "https://mirror.site.example/", registry: "mirror.site.example", base: "https://mirror.site.example"},
		{url: "https://[fd00::2]:8443", registry: "[fd00::2]:8443", base: "https://[fd00::2]:8443"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			vars, err := Mirror{URL: tc.url, KubesprayFiles: kubesprayFiles}.KubesprayVars()
			if err != nil {
				t.Fatal(err)
			}
			files := tc.base + "/files/kubespray/v2.28.0"
			for k, want := range map[string]string{
				"registry_host": tc.registry, "kube_image_repo": tc.registry, "quay_image_repo": tc.registry,
				"files_repo": files, "dl_k8s_io_url": files + "/dl.k8s.io", "github_url": files + "/github.com",
			} {
				if vars[k] != want {
					t.Errorf("%s = %v, want %s", k, vars[k], want)
				}
			}
			// The mirror's own host first (its scheme, for containerd and nerdctl alike), then
			// every other registry through it.
			mirrors := vars["containerd_registries_mirrors"].([]any)
			for i, prefix := range []string{tc.registry, "_default"} {
				m := mirrors[i].(map[string]any)
				if m["prefix"] != prefix || m["server"] != tc.base || m["mirrors"].([]any)[0].(map[string]any)["host"] != tc.base {
					t.Errorf("containerd_registries_mirrors[%d] = %v, want prefix %s through %s", i, m, prefix, tc.base)
				}
			}
			// Every variable set is one a Provisioning may not override.
			for _, k := range slices.Sorted(maps.Keys(vars)) {
				if !slices.Contains(VarNames(), k) {
					t.Errorf("%s is set but not in VarNames", k)
				}
			}
		})
	}
}

func TestMirrorRefusals(t *testing.T) {
	for _, tc := range []struct {
		m    Mirror
		want string
	}{
		{Mirror{URL: "ftp://10.0.0.2", KubesprayFiles: kubesprayFiles}, "want http(s)://HOST[:PORT]"},
		{Mirror{URL: "10.0.0.2:8080", KubesprayFiles: kubesprayFiles}, "want http(s)://HOST[:PORT]"},
		{Mirror{URL: "http://user:pw@10.0.0.2", KubesprayFiles: kubesprayFiles}, "want http(s)://HOST[:PORT]"},
		{Mirror{URL: "http://10.0.0.2/x", KubesprayFiles: kubesprayFiles}, "want http(s)://HOST[:PORT]"},
		{Mirror{URL: "http://10.0.0.2?x=1", KubesprayFiles: kubesprayFiles}, "want http(s)://HOST[:PORT]"},
		{Mirror{URL: "http://{{x}}", KubesprayFiles: kubesprayFiles}, "offline mirror"},
		{Mirror{URL: "http://10.0.0.2"}, "kubespray's files"},
		{Mirror{URL: "http://10.0.0.2", KubesprayFiles: artifacts.Ref{Kind: artifacts.Binary, Name: "a", Version: "1"}}, "want a file set"},
	} {
		if _, err := tc.m.KubesprayVars(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.m, err, tc.want)
		}
	}
	if _, err := (Mirror{URL: "http://10.0.0.2"}).PluginManifest("multus"); err == nil || !strings.Contains(err.Error(), "--offline-kud-manifests") {
		t.Errorf("a plugin manifest without the set: %v", err)
	}
	m := Mirror{URL: "http://10.0.0.2:8080/", KUDManifests: artifacts.Ref{Kind: artifacts.FileSet, Name: "kud-plugins", Version: "1"}}
	if got, _ := m.PluginManifest("multus"); got != "http://10.0.0.2:8080/files/kud-plugins/1/multus.yaml" {
		t.Errorf("PluginManifest = %s", got)
	}
}
