package testkubespray

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// The figures file is where the run by hand records its figure for the run through the
// controller and Argo to compare with (make e2e-cluster runs them in that order, on the same
// machines): the file BPA_E2E_CLUSTER_FIGURES names.
const figuresEnv = "BPA_E2E_CLUSTER_FIGURES"

// HandRun is the run by hand's figure: from the start of cluster.yml until every node was
// Ready, with the kubespray release, and when it was measured.
type HandRun struct {
	Seconds   float64   `json:"seconds"`
	Kubespray string    `json:"kubespray"`
	Measured  time.Time `json:"measured"`
}

type figures struct {
	HandRun *HandRun `json:"handRun,omitempty"`
}

// RecordHandRun writes the run by hand's figure into the figures file; without one it does
// nothing.
func RecordHandRun(h HandRun) error {
	name := os.Getenv(figuresEnv)
	if name == "" {
		return nil
	}
	raw, err := json.MarshalIndent(figures{HandRun: &h}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(raw, '\n'), 0o644)
}

// RecordedHandRun reads the run by hand's figure; nil when none is recorded.
func RecordedHandRun() (*HandRun, error) {
	name := os.Getenv(figuresEnv)
	if name == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f figures
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return f.HandRun, nil
}
