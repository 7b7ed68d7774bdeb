package checksitemirror

import (
	"errors"
	"fmt"
	"strings"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubespraydownloads"
)

// Where is where on the mirror a download is asked for: a file's own URL, an image's manifest
// under the mirror's /v2/ (REGISTRY/REPOSITORY:TAG → BASE/v2/REPOSITORY/manifests/TAG). A
// download that is not the mirror's (a file elsewhere, an image in another registry) has none:
// offline, kubespray would fetch it from outside the site.
func Where(d kubespraydownloads.Download, base, registry string) (string, bool) {
	if !d.IsImage() {
		return d.URL, strings.HasPrefix(d.URL, base+"/")
	}
	rest, ok := strings.CutPrefix(d.Image, registry+"/")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, ":")
	if i <= 0 || strings.Contains(rest[i:], "/") {
		return "", false
	}
	return base + "/v2/" + rest[:i] + "/manifests/" + rest[i+1:], true
}

// Verdict is the check's outcome: nil when the mirror holds everything kubespray fetches,
// otherwise an error naming every download missing and every one from outside the mirror, and
// how to upload them.
func Verdict(total int, missing, outside []kubespraydownloads.Download) error {
	if len(missing) == 0 && len(outside) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the site's mirror lacks %d of the %d files and images kubespray fetches for this run", len(missing)+len(outside), total)
	list := func(ds []kubespraydownloads.Download) string {
		names := make([]string, len(ds))
		for i, d := range ds {
			names[i] = d.String()
		}
		return strings.Join(names, ", ")
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "; missing: %s", list(missing))
	}
	if len(outside) > 0 {
		fmt.Fprintf(&b, "; not from the mirror (offline mode's variables are overridden, or the kubespray image ignores them): %s", list(outside))
	}
	b.WriteString(". Upload the files with `bpa-workflow-controller upload file-set` and the images with `upload images`, then retry the Workflow (argo retry)")
	return errors.New(b.String())
}
