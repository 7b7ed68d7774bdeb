// Package manifest reads the YAML files the CLI is given: multi-document, strict (an unknown
// field is an error, naming the document), typed by apiVersion and kind.
package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	metal3v1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
)

// Document is one decoded document: a *bpav1.Provisioning, *bpav1.Software, *bpav1.Cluster
// or *metal3v1alpha1.BareMetalHost.
type Document struct {
	// Index is the document's place in the file, from 1.
	Index  int
	Object any
}

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
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
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
		obj, err := decode(raw)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		docs = append(docs, Document{Index: i, Object: obj})
	}
}

func decode(raw []byte) (any, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(raw, &meta); err != nil {
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
	case meta.APIVersion == "v1" && meta.Kind == "List":
		return nil, fmt.Errorf("kind List is not supported: give the items as documents separated by ---")
	default:
		return nil, fmt.Errorf("unsupported apiVersion %q kind %q", meta.APIVersion, meta.Kind)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", meta.Kind, err)
	}
	// sigs.k8s.io/json names the full path of an unknown or repeated field, as the API server does.
	strict, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", meta.Kind, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s: %w", meta.Kind, errors.Join(strict...))
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
		h, ok := d.Object.(*metal3v1alpha1.BareMetalHost)
		if !ok {
			return nil, fmt.Errorf("%s: document %d is not a BareMetalHost", path, d.Index)
		}
		hosts = append(hosts, *h)
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
