package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/metrics"
)

// wiring is the package documentation's example.
func wiring() error {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.WithRuntimeCollectors())
	if err != nil {
		return err
	}
	// Give m to each controller (queue.WithMetrics(m)) and serve reg at
	// /metrics: operator.WithMetrics(":8080", metrics.Handler(reg)).
	_ = m
	return nil
}

func TestPackageDocExample(t *testing.T) {
	require.NoError(t, wiring())
}
