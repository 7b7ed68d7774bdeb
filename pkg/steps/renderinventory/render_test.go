package renderinventory

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/artifacts"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
)

func provisioning(extraVars map[string]bpav1.ExtraVarValue) *bpav1.Provisioning {
	return &bpav1.Provisioning{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{bpav1.ClusterLabel: "c"}},
		Spec: bpav1.ProvisioningSpec{
			Masters:   []bpav1.HostEntry{{"master-1": {MACAddress: "52:54:00:00:00:01"}}},
			PodSubnet: "10.244.64.0/18",
			Kubespray: &bpav1.KubesprayOptions{ExtraVars: extraVars},
		},
	}
}

var hosts = []bpav1.Node{{Label: "master-1", Role: "master,worker", BareMetalHost: "default/h", MAC: "52:54:00:00:00:01", IP: "10.0.0.11"}}

// TestRenderOffline: offline mode's variables join the CR's, and the CR may not set them.
func TestRenderOffline(t *testing.T) {
	mirror := &offline.Mirror{URL: "http://10.10.0.2:30580", KubesprayFiles: artifacts.Ref{Kind: artifacts.FileSet, Name: "kubespray", Version: "v2.28.0"}}
	_, raw, err := Render(provisioning(map[string]bpav1.ExtraVarValue{"kube_network_plugin": bpav1.ExtraVar("calico")}), hosts, Options{Mirror: mirror})
	if err != nil {
		t.Fatal(err)
	}
	var vars map[string]any
	if err := json.Unmarshal(raw, &vars); err != nil {
		t.Fatal(err)
	}
	if vars["kube_network_plugin"] != "calico" || vars["kube_pods_subnet"] != "10.244.64.0/18" ||
		vars["files_repo"] != "http://10.10.0.2:30580/files/kubespray/v2.28.0" || vars["registry_host"] != "10.10.0.2:30580" {
		t.Fatalf("offline extra vars: %s", raw)
	}
	if m, ok := vars["containerd_registries_mirrors"].([]any); !ok || len(m) != 2 {
		t.Fatalf("containerd_registries_mirrors is not a list of two (the mirror's host, _default): %s", raw)
	}

	_, raw, err = Render(provisioning(nil), hosts, Options{})
	if err != nil || strings.Contains(string(raw), "files_repo") || strings.Contains(string(raw), "containerd") {
		t.Fatalf("online extra vars: %s, %v", raw, err)
	}
	// Online, a CR may point kubespray at a mirror of its own.
	if _, raw, err = Render(provisioning(map[string]bpav1.ExtraVarValue{"files_repo": bpav1.ExtraVar("http://mirror.site.example")}), hosts, Options{}); err != nil || !strings.Contains(string(raw), "mirror.site.example") {
		t.Fatalf("online files_repo: %s, %v", raw, err)
	}
	for _, name := range []string{"files_repo", "registry_host", "dl_k8s_io_url", "containerd_registries_mirrors"} {
		_, _, err := Render(provisioning(map[string]bpav1.ExtraVarValue{name: bpav1.ExtraVar("http://elsewhere")}), hosts, Options{Mirror: mirror})
		if err == nil || !strings.Contains(err.Error(), "spec.kubespray.extraVars["+name+"]: offline mode sets it to the site's mirror") {
			t.Errorf("offline, extraVars[%s]: %v", name, err)
		}
	}
}
