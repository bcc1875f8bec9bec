package bench

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestMain(m *testing.M) {
	// controller-runtime warns (with a stack trace) when its logger is never
	// set; every peer logs nothing.
	crlog.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m)
}

// percentile returns the nearest-rank p-quantile (0 < p <= 1) of ds, or 0
// for no samples. ds is not modified.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := int(math.Ceil(p * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// micros converts d to microseconds.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
