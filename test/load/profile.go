package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// profileWindow is how long a burst is profiled, from its start: every burst of the defaults
// lasts longer, so the profiles cover only time when the API server is saturated.
const profileWindow = 4 * time.Second

// profiler takes Go CPU profiles of the API server and the controller while a burst runs, so
// that a figure comes with where its time went (`go tool pprof -top FILE`).
type profiler struct {
	dir       string
	apiserver *rest.RESTClient
}

func newProfiler(dir string, cfg *rest.Config) (*profiler, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	cfg.Timeout = profileWindow + 30*time.Second
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &profiler{dir: dir, apiserver: rc}, nil
}

// start profiles the API server, and the controller when pprof is its pprof address, for
// profileWindow in the background; wait returns once both profiles are written, as
// NAME.apiserver.pprof and NAME.controller.pprof.
func (p *profiler) start(ctx context.Context, name, pprof string) (wait func() error) {
	if p == nil {
		return func() error { return nil }
	}
	seconds := strconv.Itoa(int(profileWindow.Seconds()))
	errs := make(chan error, 2)
	n := 1
	go func() {
		raw, err := p.apiserver.Get().AbsPath("/debug/pprof/profile").Param("seconds", seconds).DoRaw(ctx)
		if err == nil {
			err = os.WriteFile(filepath.Join(p.dir, name+".apiserver.pprof"), raw, 0o644)
		}
		errs <- err
	}()
	if pprof != "" {
		n++
		go func() {
			errs <- fetchProfile(ctx, "http://"+pprof+"/debug/pprof/profile?seconds="+seconds, filepath.Join(p.dir, name+".controller.pprof"))
		}()
	}
	return func() error {
		var first error
		for range n {
			if err := <-errs; err != nil && first == nil {
				first = fmt.Errorf("profiling %s: %w", name, err)
			}
		}
		return first
	}
}

func fetchProfile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, res.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
