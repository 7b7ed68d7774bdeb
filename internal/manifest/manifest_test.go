package manifest_test

import (
	"slices"
	"strings"
	"testing"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/manifest"
)

const provisioning = `apiVersion: bpa.akraino.org/v1alpha1
kind: Provisioning
metadata:
  name: p
  labels:
    cluster: c
spec:
  masters:
    - master:
        mac-address: 00:c5:16:05:61:b2
  workers:
    - worker-1:
        mac-address: 00:c6:14:04:61:b2
`

const host = `apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata:
  name: node-1
  namespace: metal3
spec:
  online: true
  bootMACAddress: 00:c5:16:05:61:b2
  bmc:
    address: ipmi://192.0.2.1
    credentialsName: node-1-bmc-secret
`

const secret = `apiVersion: v1
kind: Secret
metadata:
  name: node-1-bmc-secret
  namespace: metal3
type: Opaque
data:
  username: YWRtaW4=
  password: c2VjcmV0LXBhc3N3b3Jk
`

func TestRead(t *testing.T) {
	cases := []struct {
		name, reason, in string
		wantErr          string // "" for success
		want             func(t *testing.T, docs []manifest.Document)
	}{
		{name: "duplicate-workers", reason: "a repeated key would silently drop the first block; kubectl refuses it",
			in:      provisioning + "  workers:\n    - worker-2:\n        mac-address: 00:c2:12:03:62:b2\n",
			wantErr: `document 1: line 14: key "workers" already set in map`},
		{name: "duplicate-mac", reason: "a repeated mac-address would place the entry on another host",
			in:      strings.Replace(provisioning, "        mac-address: 00:c5:16:05:61:b2\n", "        mac-address: 00:c5:16:05:61:b2\n        mac-address: 00:c6:14:04:61:b2\n", 1),
			wantErr: `line 11: key "mac-address" already set in map`},
		{name: "anchors-and-merge-keys", reason: "valid YAML kubectl accepts: an anchor, an alias, and a merge whose map overrides a merged key",
			in: strings.Replace(provisioning, "  workers:\n    - worker-1:\n        mac-address: 00:c6:14:04:61:b2\n",
				"  workers:\n    - worker-1: &small\n        mac-address: 00:c6:14:04:61:b2\n        cpu: 2\n"+
					"    - worker-2:\n        <<: *small\n        mac-address: 00:c2:12:03:62:b2\n    - worker-3: *small\n", 1),
			want: func(t *testing.T, docs []manifest.Document) {
				w := docs[0].Object.(*bpav1.Provisioning).Spec.Workers
				if len(w) != 3 || w[1]["worker-2"].MACAddress != "00:c2:12:03:62:b2" || *w[1]["worker-2"].CPU != 2 ||
					w[2]["worker-3"].MACAddress != "00:c6:14:04:61:b2" {
					t.Errorf("workers = %+v", w)
				}
			}},
		{name: "duplicate-in-merged-map", reason: "a merged mapping written with a key twice is refused where it is written",
			in:      strings.Replace(provisioning, "        mac-address: 00:c6:14:04:61:b2\n", "        <<: {cpu: 2}\n        mac-address: 00:c6:14:04:61:b2\n        mac-address: 00:c6:14:04:61:b3\n", 1),
			wantErr: `line 15: key "mac-address" already set in map`},
		{name: "byte-order-mark", reason: "a BOM before a leading comment is not part of the document",
			in: "\ufeff# the cluster\n" + provisioning,
			want: func(t *testing.T, docs []manifest.Document) {
				if len(docs) != 1 || docs[0].Object.(*bpav1.Provisioning).Name != "p" {
					t.Errorf("docs = %+v", docs)
				}
			}},
		{name: "list", reason: "kubectl get -o yaml prints a List; its items are read",
			in: "apiVersion: v1\nkind: List\nitems:\n" + indent(host) + indent(strings.ReplaceAll(host, "node-1", "node-2")),
			want: func(t *testing.T, docs []manifest.Document) {
				if len(docs) != 2 || docs[1].Item != 2 || docs[1].Object.(*metal3v1alpha1.BareMetalHost).Name != "node-2" {
					t.Errorf("docs = %+v", docs)
				}
			}},
		{name: "list-item-unknown-field", reason: "a List item is as strict as a document, and named",
			in:      "apiVersion: v1\nkind: List\nitems:\n" + indent(host+"  bogus: 1\n"),
			wantErr: "document 1 item 1: BareMetalHost: unknown field \"spec.bogus\""},
		{name: "secrets-beside-hosts", reason: "metal3's host files keep the BMC Secrets beside the hosts: passed over, unread",
			in: host + "---\n" + secret,
			want: func(t *testing.T, docs []manifest.Document) {
				if s, ok := docs[1].Object.(manifest.Skipped); !ok || s.Name != "node-1-bmc-secret" {
					t.Errorf("docs = %+v", docs)
				}
			}},
		{name: "unknown-kind", reason: "anything else is refused, naming it",
			in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", wantErr: `document 1: unsupported apiVersion "v1" kind "ConfigMap"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := manifest.Read(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("%s: got %v, want one line containing %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			tc.want(t, docs)
		})
	}
}

// TestSecretDataNeverShown: a broken Secret beside the hosts is passed over without its data
// reaching an error.
func TestSecretDataNeverShown(t *testing.T) {
	_, err := manifest.Read(strings.NewReader(host + "---\n" + secret + "  extra: {{\n"))
	if err != nil && strings.Contains(err.Error(), "c2VjcmV0") {
		t.Errorf("the Secret's data reached an error: %v", err)
	}
}

func indent(doc string) string {
	lines := strings.Split(strings.TrimRight(doc, "\n"), "\n")
	for i, l := range lines {
		if i == 0 {
			lines[i] = "- " + l
		} else {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// FuzzRead: whatever the input, Read returns documents or one error line, and never accepts a
// document with a repeated key.
func FuzzRead(f *testing.F) {
	f.Add(provisioning)
	f.Add(host + "---\n" + secret)
	f.Add("\ufeff# c\n" + provisioning)
	f.Add(provisioning + "  workers: []\n")
	f.Add("apiVersion: v1\nkind: List\nitems:\n" + indent(host))
	f.Add(strings.Replace(provisioning, "- worker-1:", "- all:", 1))
	f.Fuzz(func(t *testing.T, in string) {
		docs, err := manifest.Read(strings.NewReader(in))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a multi-line error: %q", err)
			}
			return
		}
		for _, d := range docs {
			if d.Object == nil {
				t.Fatalf("document %d decoded to nothing", d.Index)
			}
			// A Provisioning that validates names no host after a reserved Ansible name.
			if p, ok := d.Object.(*bpav1.Provisioning); ok && len(p.Validate()) == 0 {
				for _, entries := range [][]bpav1.HostEntry{p.Spec.Masters, p.Spec.Workers} {
					for _, e := range entries {
						for label := range e {
							if slices.Contains(bpav1.ReservedHostLabels, label) {
								t.Fatalf("a Provisioning with host label %q validates", label)
							}
						}
					}
				}
			}
		}
	})
}
