package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// packageVersion is the map form's value: {version: v}.
type packageVersion struct {
	Version string `json:"version,omitempty"`
}

// UnmarshalJSON accepts both BPA forms: "name" and {"name": {"version": "v"}}.
func (p *SoftwarePackage) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var name string
		if err := json.Unmarshal(data, &name); err != nil {
			return err
		}
		*p = SoftwarePackage{Name: name}
		return nil
	}
	var m map[string]*packageVersion
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("a package is a name or {name: {version: v}}: %w", err)
	}
	if len(m) != 1 {
		return fmt.Errorf("a package map has exactly one key, its name; got %d keys", len(m))
	}
	for name, v := range m {
		*p = SoftwarePackage{Name: name}
		if v != nil {
			p.Version = v.Version
		}
	}
	return nil
}

// MarshalJSON writes the name form when no version is pinned, else the map form.
func (p SoftwarePackage) MarshalJSON() ([]byte, error) {
	if p.Version == "" {
		return json.Marshal(p.Name)
	}
	return json.Marshal(map[string]packageVersion{p.Name: {Version: p.Version}})
}

// String is name or name=version, as apt and the reports write it.
func (p SoftwarePackage) String() string {
	if p.Version == "" {
		return p.Name
	}
	return p.Name + "=" + p.Version
}
