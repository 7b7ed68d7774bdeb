package cli

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/registrygate"
)

func newRegistryGateCommand() *cobra.Command {
	var upstream, listen, certFile, keyFile, maxUpload string
	cmd := &cobra.Command{
		Use:   "registry-gate --upstream http://127.0.0.1:5001 [--listen :5000] [--tls-cert-file F --tls-key-file F] [--max-upload-size 32Gi]",
		Short: "Front the site registry: TLS, and a bound on the size of an upload",
		Long: `Front the site registry (CNCF Distribution on loopback, in the same pod): every request passes
through, the registry still authenticating it and checking digests, and a blob upload that
would go past --max-upload-size is refused with 413 SIZE_INVALID before the registry stores the
byte that crosses it, whichever OCI client sends it, in one request or in chunks. GET /healthz
answers whether the registry does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			up, err := url.Parse(upstream)
			if err != nil || up.Scheme != "http" || up.Host == "" || (up.Path != "" && up.Path != "/") {
				return fmt.Errorf("--upstream %q: want http://HOST:PORT, the registry beside the gate", upstream)
			}
			limit, err := quantity("max-upload-size", maxUpload)
			if err != nil {
				return err
			}
			var tlsConfig *tls.Config
			if (certFile == "") != (keyFile == "") {
				return errors.New("--tls-cert-file and --tls-key-file go together")
			}
			if certFile != "" {
				cert, err := tls.LoadX509KeyPair(certFile, keyFile)
				if err != nil {
					return fmt.Errorf("--tls-cert-file: %w", err)
				}
				tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			gate := &registrygate.Gate{Upstream: up, MaxUpload: limit, Log: log}
			probe := &http.Client{Timeout: 5 * time.Second}
			mux := http.NewServeMux()
			mux.Handle("/", gate.Handler())
			mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
				// Any answer of the registry's /v2/ (401 without the account) says it is up.
				req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, up.JoinPath("/v2/").String(), nil)
				resp, err := probe.Do(req) //nolint:gosec // G704: the --upstream flag's registry, not a request's URL
				if err != nil {
					http.Error(w, "the registry does not answer", http.StatusServiceUnavailable)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				_, _ = io.WriteString(w, "ok\n")
			})
			return serve(cmd.Context(), listen, mux, tlsConfig, log, "fronting the site registry")
		},
	}
	cmd.Flags().StringVar(&upstream, "upstream", "", "the registry, http://HOST:PORT (required)")
	cmd.Flags().StringVar(&listen, "listen", ":5000", "address to serve on")
	cmd.Flags().StringVar(&certFile, "tls-cert-file", "", "the registry's certificate (PEM); empty: plain HTTP")
	cmd.Flags().StringVar(&keyFile, "tls-key-file", "", "its key (PEM)")
	cmd.Flags().StringVar(&maxUpload, "max-upload-size", "32Gi", "refuse a blob upload larger than this (a Kubernetes quantity)")
	_ = cmd.MarkFlagRequired("upstream")
	return cmd
}
