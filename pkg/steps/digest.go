package steps

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Digest is a short, stable hash of a value's JSON (struct fields in declaration order, map
// keys sorted, quantities canonical): what the status records of a spec, to see later whether
// it changed. Two steps record one (run-kubespray the cluster's, install-software each role's
// packages), and a record written by one release must read the same in the next.
func Digest(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		// Only API types and strings reach here, and they always marshal.
		panic(fmt.Sprintf("steps: digest of %T: %v", v, err))
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}
