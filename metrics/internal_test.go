package metrics

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// foreignCollector describes exactly the metrics of one of ours but is not
// the type New expects.
type foreignCollector struct {
	*prometheus.CounterVec
}

func TestNewRejectsForeignCollectorWithSameMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(foreignCollector{newRecorder().retries}))

	rec, err := New(reg)
	require.Error(t, err)
	assert.Nil(t, rec)
	assert.Contains(t, err.Error(), "metrics: a collector of type metrics.foreignCollector with the same metrics is already registered")
	var already prometheus.AlreadyRegisteredError
	assert.True(t, errors.As(err, &already))

	// The collectors registered before the failure were unregistered.
	fresh := newRecorder()
	for _, c := range []prometheus.Collector{fresh.reconcileTotal, fresh.activeWorkers, fresh.longestRunning} {
		assert.NoError(t, reg.Register(c))
	}
}
