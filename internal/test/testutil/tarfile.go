package testutil

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// FileInArchive is the file at path under a top folder of the tar archive (gzipped or not):
// kubespray's source tarball holds its tree under kubespray-<version>/, the root filesystem
// of its image under ./kubespray/. It reads at most 16 MiB of the file.
func FileInArchive(archive, path string) ([]byte, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var in io.Reader = r
	if magic, _ := r.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", archive, err)
		}
		in = gz
	}
	tr := tar.NewReader(in)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s has no %s under a top folder", archive, path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", archive, err)
		}
		if _, rest, ok := strings.Cut(filepath.Clean(h.Name), "/"); ok && rest == path {
			return io.ReadAll(io.LimitReader(tr, 16<<20))
		}
	}
}
