package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// labelWebhook is the path a webhook is served at, as controller-runtime
// labels its webhook series.
const labelWebhook = "webhook"

// webhookCollectors are the series of Webhook.
type webhookCollectors struct {
	latency  *prometheus.HistogramVec
	requests *prometheus.CounterVec
	inFlight *prometheus.GaugeVec
}

func newWebhookCollectors() webhookCollectors {
	webhook := []string{labelWebhook}
	return webhookCollectors{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: controllerRuntimeNamespace, Subsystem: "webhook", Name: "latency_seconds",
			Help: "Time to answer a webhook request, by webhook path.",
		}, webhook),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: controllerRuntimeNamespace, Subsystem: "webhook", Name: "requests_total",
			Help: "Webhook requests answered, by webhook path and HTTP status code.",
		}, []string{labelWebhook, "code"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: controllerRuntimeNamespace, Subsystem: "webhook", Name: "requests_in_flight",
			Help: "Webhook requests being answered, by webhook path.",
		}, webhook),
	}
}

// Webhook returns h counted in controller_runtime_webhook_latency_seconds,
// controller_runtime_webhook_requests_total (by HTTP status code) and
// controller_runtime_webhook_requests_in_flight under the label webhook,
// the path h is served at, as controller-runtime counts its webhooks.
func (r *Recorder) Webhook(path string, h http.Handler) http.Handler {
	labels := prometheus.Labels{labelWebhook: path}
	return promhttp.InstrumentHandlerDuration(r.webhook.latency.MustCurryWith(labels),
		promhttp.InstrumentHandlerCounter(r.webhook.requests.MustCurryWith(labels),
			promhttp.InstrumentHandlerInFlight(r.webhook.inFlight.With(labels), h)))
}
