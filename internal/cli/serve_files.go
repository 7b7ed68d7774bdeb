package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/fileserver"
	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/siteregistry"
)

func newServeFilesCommand() *cobra.Command {
	f := &siteregistry.Flags{}
	var listen string
	cmd := &cobra.Command{
		Use:   "serve-files --registry HOST[/PREFIX] [--listen :8080]",
		Short: "Serve the site registry's files and images over plain HTTP, read-only: the site's mirror",
		Long: `Serve the site registry's files and images over plain HTTP, read-only, for what needs a URL
(a BareMetalHost's image.url and image.checksum, kubespray's files_repo, the KUD plugins'
manifests) and for the nodes' container runtime in offline mode (--offline-mirror):

  GET /binaries/NAME/VERSION/FILE       GET /os-images/NAME/VERSION/FILE
  GET /files/NAME/VERSION/PATH          a file of a file set
  GET .../FILE.sha256sum                (HEX  FILE, as sha256sum writes it)
  GET /v2/...                           the registry's images, pulls only, without an account

Every file and blob is read from the registry and checked against its digest as it is served.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, err := f.Client(cmd.InOrStdin())
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			return serve(cmd.Context(), listen, &fileserver.Handler{Registry: client, Log: log}, nil, log, "serving the site registry's files")
		},
	}
	f.AddTo(cmd.Flags())
	cmd.Flags().StringVar(&listen, "listen", ":8080", "address to serve on")
	return cmd
}

// serve serves h (over TLS with tlsConfig) until ctx ends, then lets running requests finish
// for up to 30 s.
func serve(ctx context.Context, listen string, h http.Handler, tlsConfig *tls.Config, log *slog.Logger, what string) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if tlsConfig != nil {
		l = tls.NewListener(l, tlsConfig)
	}
	srv := &http.Server{
		Handler: h,
		// No write timeout: an OS image takes as long as the network needs.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	log.Info(what, "address", l.Addr().String())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
