package kubespraydownloads

import (
	"strings"
	"testing"
)

const sample = `{"master-1": [
  {"name": "cni", "url": "http://10.10.0.2:30580/files/kubespray/v2.30.0/github.com/containernetworking/plugins/releases/download/v1.8.0/cni-plugins-linux-amd64-v1.8.0.tgz",
   "checksum": "sha256:ab3bda535f9d90766cccc90d3dddb5482003dd744d7f22bcf98186bf8eea8be6"},
  {"name": "coredns", "image": "10.10.0.2:30580/coredns/coredns:v1.12.1"},
  {"name": "kubeadm_kube-apiserver", "image": "10.10.0.2:30580/kube-apiserver:v1.34.3"},
  {"name": "runc", "url": "https://github.com/opencontainers/runc/releases/download/v1.3.4/runc.amd64", "checksum": ""}
], "worker-1": [
  {"name": "coredns", "image": "10.10.0.2:30580/coredns/coredns:v1.12.1"},
  {"name": "nginx", "image": "10.10.0.2:30580/library/nginx:1.28.0-alpine"}
]}`

func TestParse(t *testing.T) {
	byNode, err := Parse([]byte(sample))
	list := byNode["master-1"]
	if err != nil || len(byNode) != 2 || len(list) != 4 || !list[1].IsImage() || list[0].IsImage() {
		t.Fatalf("Parse: %v %v", byNode, err)
	}
	for _, tc := range []struct{ raw, want string }{
		{`[]`, "cannot unmarshal array"},
		{`{}`, "names no node"},
		{`{"n;x": []}`, `node "n;x"`},
		{`{"n": [{"name": "x", "url": "http://h/f", "extra": 1}]}`, `unknown field "extra"`},
		{`{"n": [{"name": "a b", "image": "r/i:1"}]}`, `name "a b"`},
		{`{"n": [{"name": "x", "image": "r/i"}]}`, "want REPOSITORY:TAG"},
		{`{"n": [{"name": "x", "image": "r/i:1", "url": "http://h/f"}]}`, "an image has no url"},
		{`{"n": [{"name": "x", "url": "file:///etc/passwd"}]}`, "want an http(s) URL"},
		{`{"n": [{"name": "x", "url": "http://h/f", "checksum": "md5:00"}]}`, "want sha256:HEX"},
		{`{"n": [{"name": "x"}]}`, "node n, entry 0: x: url"},
	} {
		if _, err := Parse([]byte(tc.raw)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s): %v, want %q", tc.raw, err, tc.want)
		}
	}
}

func TestMergeAndOutside(t *testing.T) {
	byNode, _ := Parse([]byte(sample))
	all := All(byNode)
	var names []string
	for _, d := range all {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, " "); got != "cni coredns kubeadm_kube-apiserver nginx runc" {
		t.Errorf("Merge: %s", got)
	}
	out := Outside(all, "http://10.10.0.2:30580/files/kubespray/v2.30.0", "10.10.0.2:30580")
	if len(out) != 1 || out[0].Name != "runc" {
		t.Errorf("Outside: %v, want runc only", out)
	}
	if out := Outside(all, "http://10.10.0.2:30580/files/kubespray/v2.30.0/", "10.10.0.2:3058"); len(out) != 4 {
		t.Errorf("Outside with another registry port: %v, want the 3 images and runc", out)
	}
}

func TestPlaybookNamesItsVariable(t *testing.T) {
	if !strings.Contains(string(Playbook), "{{ "+DirVar+" }}") {
		t.Errorf("the playbook does not write into {{ %s }}", DirVar)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte(`{"n": [{"name": "x", "image": "r/i:1"}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		byNode, err := Parse(raw)
		if err != nil {
			return
		}
		for _, d := range All(byNode) {
			if err := d.validate(); err != nil {
				t.Fatalf("Parse accepted %v: %v", d, err)
			}
			if d.IsImage() == (d.URL != "") {
				t.Fatalf("Parse accepted %v: neither or both of url and image", d)
			}
		}
	})
}
