// Package manifest reads the YAML files the CLI is given: multi-document, strict (an unknown
// field, or a key repeated in a mapping, is an error naming the document and the key, as
// kubectl refuses it), typed by apiVersion and kind. A UTF-8 byte-order mark is ignored;
// `kind: List` (what `kubectl get -o yaml` prints) is read item by item; Secrets (metal3's host
// files keep the BMC credentials beside the hosts) are passed over unread.
package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	yamlv3 "gopkg.in/yaml.v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// Document is one decoded document: a *bpav1.Provisioning, *bpav1.Software, *bpav1.Cluster,
// *metal3v1alpha1.BareMetalHost or Skipped.
type Document struct {
	// Index is the document's place in the file, from 1.
	Index int
	// Item is its place in a `kind: List` document, from 1; 0 outside a List.
	Item   int
	Object any
}

// Skipped is a document passed over unread: a Secret (its data is never decoded, so never
// shown in an error).
type Skipped struct{ Kind, Name string }

// byteOrderMark is UTF-8's, which some editors write before the first line.
var byteOrderMark = []byte{0xEF, 0xBB, 0xBF}

// ReadFile decodes every document of a file.
func ReadFile(path string) ([]Document, error) {
	f, err := os.Open(path) //nolint:gosec // G304: reading the file the user names is the point
	if err != nil {
		return nil, err
	}
	defer f.Close()
	docs, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return docs, nil
}

// Read decodes every document of a stream.
func Read(r io.Reader) ([]Document, error) {
	br := bufio.NewReader(r)
	if head, err := br.Peek(len(byteOrderMark)); err == nil && bytes.Equal(head, byteOrderMark) {
		_, _ = br.Discard(len(byteOrderMark))
	}
	reader := utilyaml.NewYAMLReader(br)
	var docs []Document
	for i := 1; ; i++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			i--
			continue
		}
		js, err := toJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		items, err := decodeList(js)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if items == nil {
			obj, err := decode(js)
			if err != nil {
				return nil, fmt.Errorf("document %d: %w", i, err)
			}
			docs = append(docs, Document{Index: i, Object: obj})
			continue
		}
		for j, item := range items {
			obj, err := decode(item)
			if err != nil {
				return nil, fmt.Errorf("document %d item %d: %w", i, j+1, err)
			}
			docs = append(docs, Document{Index: i, Item: j + 1, Object: obj})
		}
	}
}

// toJSON converts one YAML document as kubectl does (anchors, aliases and merge keys
// included), refusing a key written twice in one mapping (YAML would keep the last silently: a
// second `workers:` would drop the first block) with its line, on one line. A key a merge
// (`<<: *base`) brings in and the mapping sets again is an override, not a repeat.
func toJSON(raw []byte) ([]byte, error) {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(raw, &root); err != nil {
		return nil, oneLine(err)
	}
	if err := repeatedKey(&root); err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, oneLine(err)
	}
	return js, nil
}

// oneLine is a YAML error on one line, without the converters' prefixes.
func oneLine(err error) error {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:")
	return errors.New(strings.Join(strings.Fields(msg), " "))
}

// repeatedKey finds a key written twice in one mapping of the tree. Aliases are not followed:
// the node they name is checked where it is written, and a document of many aliases costs no
// more than its text.
func repeatedKey(n *yamlv3.Node) error {
	if n.Kind == yamlv3.MappingNode {
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i]
			if key.Kind != yamlv3.ScalarNode || key.Tag == "!!merge" {
				continue
			}
			if seen[key.Value] {
				return fmt.Errorf("line %d: key %q already set in map", key.Line, key.Value)
			}
			seen[key.Value] = true
		}
	}
	for _, c := range n.Content {
		if err := repeatedKey(c); err != nil {
			return err
		}
	}
	return nil
}

// decodeList returns the items of a `kind: List` document (nil for any other document).
func decodeList(js []byte) ([]json.RawMessage, error) {
	var list struct {
		metav1.TypeMeta `json:",inline"`
		Items           []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &list); err != nil {
		return nil, err
	}
	if list.APIVersion != "v1" || list.Kind != "List" {
		return nil, nil
	}
	if list.Items == nil {
		list.Items = []json.RawMessage{}
	}
	return list.Items, nil
}

func decode(js []byte) (any, error) {
	var meta metav1.TypeMeta
	if err := json.Unmarshal(js, &meta); err != nil {
		return nil, err
	}
	var obj any
	switch {
	case meta.APIVersion == bpav1.GroupVersion.String() && meta.Kind == "Provisioning":
		obj = &bpav1.Provisioning{}
	case meta.APIVersion == bpav1.GroupVersion.String() && meta.Kind == "Software":
		obj = &bpav1.Software{}
	case meta.APIVersion == bpav1.GroupVersion.String() && meta.Kind == "Cluster":
		obj = &bpav1.Cluster{}
	case meta.APIVersion == metal3v1alpha1.GroupVersion.String() && meta.Kind == "BareMetalHost":
		obj = &metal3v1alpha1.BareMetalHost{}
	case meta.APIVersion == "v1" && meta.Kind == "Secret":
		var named struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(js, &named) // the name only: its data is never read
		return Skipped{Kind: meta.Kind, Name: named.Metadata.Name}, nil
	default:
		return nil, fmt.Errorf("unsupported apiVersion %q kind %q", meta.APIVersion, meta.Kind)
	}
	// sigs.k8s.io/json names the full path of an unknown or repeated field, as the API server does.
	strict, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", meta.Kind, err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("%s: %s", meta.Kind, strings.Join(msgs, "; ")) // one line, as the CLI promises
	}
	return obj, nil
}

func stripComments(raw []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

// BareMetalHosts reads a file of BareMetalHost documents.
func BareMetalHosts(path string) ([]metal3v1alpha1.BareMetalHost, error) {
	docs, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	hosts := make([]metal3v1alpha1.BareMetalHost, 0, len(docs))
	for _, d := range docs {
		switch obj := d.Object.(type) {
		case *metal3v1alpha1.BareMetalHost:
			hosts = append(hosts, *obj)
		case Skipped: // the hosts' BMC credentials
		default:
			return nil, fmt.Errorf("%s: document %d is not a BareMetalHost", path, d.Index)
		}
	}
	return hosts, nil
}

// Provisioning reads a file holding exactly one Provisioning.
func Provisioning(path string) (*bpav1.Provisioning, error) {
	docs, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	var found []*bpav1.Provisioning
	for _, d := range docs {
		if p, ok := d.Object.(*bpav1.Provisioning); ok {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%s: want exactly one Provisioning, found %d", path, len(found))
	}
	return found[0], nil
}
