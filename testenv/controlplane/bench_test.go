package controlplane_test

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
)

// BenchmarkStart starts and stops a control plane of each size with the
// binaries already built, and reports the median start-up time (Start until
// it returns: ready, and for Full the node Ready and the controllers healthy)
// and the median resident memory of all components right after start-up.
// Run it with a fixed count: -bench BenchmarkStart -benchtime 5x.
func BenchmarkStart(b *testing.B) {
	for _, size := range []controlplane.Size{controlplane.APIServerOnly, controlplane.Full} {
		b.Run(size.String(), func(b *testing.B) {
			var startup, rss []float64
			for b.Loop() {
				cp, err := controlplane.Start(b.Context(), controlplane.Options{Size: size})
				if err != nil {
					b.Fatal(err)
				}
				startup = append(startup, float64(cp.StartupDuration())/float64(time.Millisecond))
				var total int64
				for name, pid := range cp.Pids() {
					kib, err := residentKiB(pid)
					if err != nil {
						b.Fatalf("%s: %v", name, err)
					}
					total += kib
				}
				rss = append(rss, float64(total)/1024)
				if err := cp.Stop(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(median(startup), "median-start-ms")
			b.ReportMetric(median(rss), "median-rss-MiB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// residentKiB reads VmRSS of a process from /proc.
func residentKiB(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, sc.Err()
}
