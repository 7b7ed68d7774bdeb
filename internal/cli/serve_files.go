package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/fileserver"
)

func newServeFilesCommand() *cobra.Command {
	f := &registryFlags{}
	var listen string
	cmd := &cobra.Command{
		Use:   "serve-files --registry HOST[/PREFIX] [--listen :8080]",
		Short: "Serve the site registry's binaries and OS images over plain HTTP, read-only",
		Long: `Serve the site registry's binaries and OS images over plain HTTP, read-only, for what
needs a URL (a BareMetalHost's image.url and image.checksum):

  GET /binaries/NAME/VERSION/FILE       GET /os-images/NAME/VERSION/FILE
  GET .../FILE.sha256sum                (HEX  FILE, as sha256sum writes it)

Every file is read from the registry and checked against its digest as it is served.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, err := f.client(cmd.InOrStdin())
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			return serveFiles(cmd.Context(), listen, &fileserver.Handler{Registry: client, Log: log}, log)
		},
	}
	f.addTo(cmd.Flags())
	cmd.Flags().StringVar(&listen, "listen", ":8080", "address to serve on")
	return cmd
}

// serveFiles serves until ctx ends, then lets running downloads finish for up to 30 s.
func serveFiles(ctx context.Context, listen string, h http.Handler, log *slog.Logger) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	srv := &http.Server{
		Handler: h,
		// No write timeout: an OS image takes as long as the network needs.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	log.Info("serving the site registry's files", "address", l.Addr().String())
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
