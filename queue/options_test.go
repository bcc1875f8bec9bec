package queue

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

// A controller without WithMetrics records nothing: its queue keeps no
// metrics and reads no clock for them. With WithMetrics, the queue keeps
// them for the given Metrics.
func TestMetricsOption(t *testing.T) {
	r := reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) { return reconcile.Result{}, nil })
	plain, err := New("plain", r)
	require.NoError(t, err)
	assert.Equal(t, NoopMetrics{}, plain.metrics)
	assert.Nil(t, plain.base.m, "the queue of a controller without metrics keeps metrics")
	plain.Add("a")
	assert.Zero(t, plain.base.now(), "the queue of a controller without metrics reads the clock")

	m := &retryCounter{}
	measured, err := New("measured", r, WithMetrics(m))
	require.NoError(t, err)
	assert.Same(t, m, measured.metrics)
	assert.NotNil(t, measured.base.m, "the queue of a controller with metrics keeps none")
}
