//go:build vm

package vm_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
)

// BenchmarkGuestWork boots one machine of 2 CPUs, as the tests' masters, with the CPU model
// testvm.CPUModel names (BPA_VM_CPU), and times in it the work a master's control plane does
// most (testdata/guestwork: TLS handshakes, SHA-256, AES-GCM, JSON), as metrics: which CPU
// model QEMU's software emulation runs a master fastest.
func BenchmarkGuestWork(b *testing.B) {
	imageDir, signer := benchMachines(b)
	work := filepath.Join(b.TempDir(), "guestwork")
	build := exec.Command("go", "build", "-o", work, "./testdata/guestwork")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building guestwork: %v\n%s", err, out)
	}
	binary, err := os.ReadFile(work)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		site := testvm.NewSite(b, "10.254.0", []testvm.Spec{{Name: "vm-1", CPUs: 2, MemoryMiB: 1024}})
		site.Boot(b, testvm.ImageIn(imageDir), signer.PublicKey())
		ctx, cancel := context.WithTimeout(context.Background(), 2*bootWait)
		c, _, err := site.Machines()[0].Dial(ctx, testvm.AdminUser, signer)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		sess, err := c.NewSession()
		if err != nil {
			b.Fatal(err)
		}
		sess.Stdin = bytes.NewReader(binary)
		if out, err := sess.CombinedOutput("cat > /tmp/guestwork && chmod +x /tmp/guestwork"); err != nil {
			b.Fatalf("copying guestwork: %v\n%s", err, out)
		}
		_ = sess.Close()
		for _, line := range strings.Split(strings.TrimSpace(testvm.Run(b, c, "/tmp/guestwork")), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 {
				b.Fatalf("guestwork said %q", line)
			}
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				b.Fatalf("guestwork said %q", line)
			}
			b.ReportMetric(v, f[0]+"-"+f[2])
		}
		_ = c.Close()
		site.Machines()[0].PowerOff()
	}
}
