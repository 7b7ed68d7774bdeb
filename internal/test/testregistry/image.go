package testregistry

import (
	"context"
	"fmt"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
)

// PushImage pushes an image of one uncompressed layer to repo at tag and returns its manifest.
// The config names the layer as its one diff_id, so containerd can unpack it when it is a tar.
func PushImage(t testing.TB, repo oras.Target, tag string, layer []byte) ocispec.Descriptor {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := memory.New()
	l, err := oras.PushBytes(ctx, store, ocispec.MediaTypeImageLayer, layer)
	if err != nil {
		t.Fatal(err)
	}
	config, err := oras.PushBytes(ctx, store, ocispec.MediaTypeImageConfig, fmt.Appendf(nil,
		`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[%q]}}`, l.Digest))
	if err != nil {
		t.Fatal(err)
	}
	m, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{ConfigDescriptor: &config, Layers: []ocispec.Descriptor{l}})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Tag(ctx, m, tag); err != nil {
		t.Fatal(err)
	}
	if _, err := oras.Copy(ctx, store, tag, repo, tag, oras.DefaultCopyOptions); err != nil {
		t.Fatal(err)
	}
	return m
}
