// Command devcluster runs the local control plane for `make dev-up`: etcd and kube-apiserver
// (built by hack/control-plane.sh) on 127.0.0.1, with etcd's data under the given directory,
// and an admin kubeconfig written beside it. It runs until SIGTERM or SIGINT, then stops both.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func main() {
	dir := flag.String("dir", "bin/dev", "directory for etcd's data and the kubeconfig")
	assets := flag.String("assets", "bin/k8s", "directory holding etcd and kube-apiserver")
	flag.Parse()
	if err := run(*dir, *assets); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func run(dir, assets string) error {
	if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o700); err != nil {
		return err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	env.ControlPlane.Etcd = &envtest.Etcd{DataDir: filepath.Join(dir, "etcd")}
	if _, err := env.Start(); err != nil {
		stopErr := env.Stop()
		return fmt.Errorf("starting the control plane: %w (stop: %v)", err, stopErr)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "devcluster: stopping:", err)
		}
	}()
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path+".tmp", kubeconfig, 0o600); err != nil {
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return err
	}
	fmt.Printf("devcluster: API server at %s; kubeconfig %s\n", env.Config.Host, path)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	<-ctx.Done()
	_ = os.Remove(path)
	fmt.Println("devcluster: stopping")
	return nil
}
