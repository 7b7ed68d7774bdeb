package testcluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sum(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

// build writes a downloads build's checksums file as hack/kubespray-downloads writes it.
func build(t *testing.T, checksums map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	raw, err := json.Marshal(checksums)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ChecksumsFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func kubelet(version string, c byte) ChecksumTable {
	return ChecksumTable{"amd64": {version: sum(c)}}
}

// TestVarsMergesTwoKubernetesVersions: the builds of an upgrade's two versions give kubespray
// both versions' checksums in its own tables, one etcd, and the older version as the oldest
// kubespray may install (its table reaches kubespray newest last, which would otherwise make
// the newest the minimum).
func TestVarsMergesTwoKubernetesVersions(t *testing.T) {
	newer := build(t, map[string]any{"kubelet_checksums": kubelet("1.34.3", 'a'), "kubeadm_checksums": kubelet("1.34.3", 'b'), "etcd_binary_checksum": sum('e')})
	older := build(t, map[string]any{"kubelet_checksums": kubelet("1.33.7", 'c'), "kubeadm_checksums": kubelet("1.33.7", 'd'), "etcd_binary_checksum": sum('e')})
	vars, err := Vars(newer, older)
	if err != nil {
		t.Fatal(err)
	}
	var table ChecksumTable
	if err := json.Unmarshal(vars["kubelet_checksums"].Raw, &table); err != nil {
		t.Fatal(err)
	}
	if len(table["amd64"]) != 2 || table["amd64"]["1.34.3"] != sum('a') || table["amd64"]["1.33.7"] != sum('c') {
		t.Errorf("kubelet_checksums = %v, want both versions", table)
	}
	if got := string(vars["etcd_binary_checksum"].Raw); got != `"`+sum('e')+`"` {
		t.Errorf("etcd_binary_checksum = %s", got)
	}
	if got := string(vars["kube_version_min_required"].Raw); got != `"1.33.7"` {
		t.Errorf("kube_version_min_required = %s, want the older version", got)
	}
	if got := string(vars["kube_network_plugin"].Raw); got != `"flannel"` {
		t.Errorf("the test cluster's options are lost: kube_network_plugin = %s", got)
	}

	one, err := Vars(newer)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(one["kube_version_min_required"].Raw); got != `"1.34.3"` {
		t.Errorf("one build: kube_version_min_required = %s, want its version", got)
	}
}

func TestVarsRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		builds [][]byte // raw checksums files
		want   string
	}{
		"two etcds":                  {[][]byte{[]byte(`{"etcd_binary_checksum":"` + sum('1') + `"}`), []byte(`{"etcd_binary_checksum":"` + sum('2') + `"}`)}, "disagree on etcd_binary_checksum"},
		"one version, two sums":      {[][]byte{[]byte(`{"kubelet_checksums":{"amd64":{"1.34.3":"` + sum('1') + `"}}}`), []byte(`{"kubelet_checksums":{"amd64":{"1.34.3":"` + sum('2') + `"}}}`)}, "disagree on kubelet_checksums[amd64][1.34.3]"},
		"not a checksum":             {[][]byte{[]byte(`{"etcd_binary_checksum":"md5:00"}`)}, "etcd_binary_checksum"},
		"a version not one":          {[][]byte{[]byte(`{"kubelet_checksums":{"amd64":{"latest":"` + sum('1') + `"}}}`)}, "latest"},
		"a table of the wrong shape": {[][]byte{[]byte(`{"kubelet_checksums":{"amd64":"` + sum('1') + `"}}`)}, "kubelet_checksums"},
		"any other name":             {[][]byte{[]byte(`{"kube_version":"1.34.3"}`)}, "kube_version: want NAME_checksum or NAME_checksums"},
		"not JSON":                   {[][]byte{[]byte(`{`)}, ChecksumsFile},
	} {
		t.Run(name, func(t *testing.T) {
			var dirs []string
			for _, raw := range tc.builds {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, ChecksumsFile), raw, 0o644); err != nil {
					t.Fatal(err)
				}
				dirs = append(dirs, dir)
			}
			_, err := Vars(dirs...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Vars = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := Vars(); err == nil {
		t.Error("Vars of no build: no error")
	}
	if _, err := Vars(t.TempDir()); err == nil {
		t.Error("Vars of a folder without checksums.json: no error")
	}
}

func TestOldestVersion(t *testing.T) {
	for _, tc := range []struct {
		versions []string
		want     string
	}{
		{nil, ""},
		{[]string{"1.34.3"}, "1.34.3"},
		{[]string{"1.34.3", "1.33.7", "1.34.10"}, "1.33.7"},
		{[]string{"1.9.0", "1.10.0"}, "1.9.0"}, // by number, not by name
		{[]string{"x", "1.33.7"}, "1.33.7"},
	} {
		table := map[string]string{}
		for _, v := range tc.versions {
			table[v] = sum('0')
		}
		if got := oldestVersion(table); got != tc.want {
			t.Errorf("oldestVersion(%v) = %q, want %q", tc.versions, got, tc.want)
		}
	}
}
