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
	m, err := metrics.New(reg)
	if err != nil {
		return err
	}
	handler, err := metrics.Handler(reg, metrics.WithRuntimeCollectors())
	if err != nil {
		return err
	}
	// Give m to each controller (queue.WithMetrics(m)) and serve handler at
	// /metrics (operator.WithMetrics(":8080", handler)).
	_, _ = m, handler
	return nil
}

func TestPackageDocExample(t *testing.T) {
	require.NoError(t, wiring())
}
