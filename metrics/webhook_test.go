package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/metrics/metricstest"
)

func TestWebhook(t *testing.T) {
	reg := prometheus.NewRegistry()
	rec, err := metrics.New(reg)
	require.NoError(t, err)
	var inFlight float64
	h := rec.Webhook("/validate-foo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight = metricstest.Value(t, reg, "controller_runtime_webhook_requests_in_flight", map[string]string{"webhook": "/validate-foo"})
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
		}
	}))
	for _, method := range []string{http.MethodPost, http.MethodPost, http.MethodGet} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, "/validate-foo", nil))
	}
	assert.Equal(t, 1.0, inFlight, "counted while it is answered")
	assert.Equal(t, 0.0, metricstest.Value(t, reg, "controller_runtime_webhook_requests_in_flight", map[string]string{"webhook": "/validate-foo"}))
	assert.Equal(t, 2.0, metricstest.Value(t, reg, "controller_runtime_webhook_requests_total", map[string]string{"webhook": "/validate-foo", "code": "200"}))
	assert.Equal(t, 1.0, metricstest.Value(t, reg, "controller_runtime_webhook_requests_total", map[string]string{"webhook": "/validate-foo", "code": "405"}))
}
