//go:build vm

package vm_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/akraino-edge-stack/bpa-workflow-controller/internal/test/testvm"
)

// BenchmarkBootSite boots BPA_VM_COUNT machines (default 3) of 1 CPU and BPA_VM_MIB MiB
// (default 1024) together and reports how long the slowest took to answer SSH, the median, and
// QEMU's resident memory per machine: how many machines a site of the tests can have on this
// machine, and what each costs.
func BenchmarkBootSite(b *testing.B) {
	imageDir, signer := benchMachines(b)
	count, mib := envInt("BPA_VM_COUNT", 3), envInt("BPA_VM_MIB", 1024)
	for range b.N {
		var specs []testvm.Spec
		for i := range count {
			specs = append(specs, testvm.Spec{Name: "vm-" + strconv.Itoa(i+1), CPUs: 1, MemoryMiB: mib})
		}
		bootOnce(b, specs, imageDir, signer)
	}
}

func bootOnce(b *testing.B, specs []testvm.Spec, imageDir string, signer ssh.Signer) {
	site := testvm.NewSite(b, "10.254.0", specs)
	site.Boot(b, testvm.ImageIn(imageDir), signer.PublicKey())
	ctx, cancel := context.WithTimeout(context.Background(), 2*bootWait)
	defer cancel()
	var mu sync.Mutex
	var secs []float64
	var rss int64
	var wg sync.WaitGroup
	for _, m := range site.Machines() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _, err := m.Dial(ctx, testvm.AdminUser, signer)
			if err != nil {
				b.Error(err)
				return
			}
			_ = c.Close()
			r, _ := m.RSS()
			mu.Lock()
			secs = append(secs, time.Since(m.Booted).Seconds())
			rss += r
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, m := range site.Machines() {
		m.PowerOff()
	}
	if len(secs) == 0 {
		return
	}
	slices.Sort(secs)
	b.ReportMetric(secs[len(secs)-1], "s-to-ssh-max")
	b.ReportMetric(secs[len(secs)/2], "s-to-ssh-p50")
	b.ReportMetric(float64(rss>>20)/float64(len(secs)), "MiB-rss/machine")
	b.ReportMetric(float64(len(secs)), "machines")
}

// benchMachines is the image a benchmark boots its machines from and the key they let in; it
// skips b without root or the image.
func benchMachines(b *testing.B) (imageDir string, signer ssh.Signer) {
	imageDir = os.Getenv("BPA_VM_IMAGE")
	if os.Getuid() != 0 || imageDir == "" {
		b.Skip("needs root and BPA_VM_IMAGE (make vms)")
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		b.Fatal(err)
	}
	return imageDir, signer
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
