package metricstest_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/metrics/metricstest"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// runController runs a controller named foo over one key until it has been
// reconciled.
func runController(t *testing.T, opts ...queue.Option) {
	done := make(chan struct{})
	ctrl, err := queue.New("foo", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		close(done)
		return reconcile.Result{}, nil
	}), opts...)
	require.NoError(t, err)
	ctrl.Add("a")
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- ctrl.Run(ctx) }()
	<-done
	cancel()
	require.NoError(t, <-stopped)
}

// The package documentation's example.
func TestPackageDocExample(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	require.NoError(t, err)
	runController(t, queue.WithMetrics(m)) // the controller under test
	n := metricstest.Value(t, reg, "controller_runtime_reconcile_total",
		map[string]string{"controller": "foo", "result": "success"})
	assert.Equal(t, 1.0, n)
}
