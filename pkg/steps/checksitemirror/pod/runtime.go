package pod

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubespraydownloads"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/checksitemirror"
)

// manifestTypes are the image manifests a container runtime accepts, asked for as it asks.
const manifestTypes = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, " +
	"application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json"

// Run reads the list (downloadsFile, as kubespraydownloads.Playbook wrote it) and asks the
// mirror for each download with a HEAD, saying in log what it found. The mirror not answering,
// or answering anything but 200 or 404, is retryable: the site's mirror may be restarting.
func Run(ctx context.Context, hc *http.Client, downloadsFile, mirrorURL string, log io.Writer) error {
	base, registry, err := offline.Endpoints(mirrorURL)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(downloadsFile) //nolint:gosec // G304: the step's own input file, which Argo wrote
	if err != nil {
		return err
	}
	byNode, err := kubespraydownloads.Parse(raw)
	if err != nil {
		return err
	}
	all := kubespraydownloads.All(byNode)
	var missing, outside []kubespraydownloads.Download
	for _, d := range all {
		where, ok := checksitemirror.Where(d, base, registry)
		if !ok {
			outside = append(outside, d)
			fmt.Fprintf(log, "NOT FROM THE MIRROR %s\n", d)
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, where, nil)
		if err != nil {
			return err
		}
		if d.IsImage() {
			req.Header.Set("Accept", manifestTypes)
		}
		resp, err := hc.Do(req) //nolint:gosec // G704: only URLs under the mirror the site configured (Where refuses any other)
		if err != nil {
			return steps.Retryable(fmt.Errorf("the site's mirror %s does not answer: %w", base, err))
		}
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			fmt.Fprintf(log, "ok      %s\n", d)
		case http.StatusNotFound:
			missing = append(missing, d)
			fmt.Fprintf(log, "MISSING %s\n", d)
		default:
			return steps.Retryable(fmt.Errorf("the site's mirror answers %s for %s (%s)", resp.Status, d, where))
		}
	}
	if err := checksitemirror.Verdict(len(all), missing, outside); err != nil {
		return err
	}
	fmt.Fprintf(log, "the site's mirror holds all %d files and images kubespray fetches for this run (%d nodes)\n", len(all), len(byNode))
	return nil
}
