package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Option configures New. A nil Option is ignored.
type Option func(*config)

type config struct{ runtime bool }

// WithRuntimeCollectors also registers the Go runtime collector (go_*) and
// the process collector (process_*), as controller-runtime's default
// registry has them. Collectors of the same kind already registered are
// kept, however they are configured: a registry that already serves
// go_goroutines gets no Go collector from New, one that serves
// process_start_time_seconds no process collector.
func WithRuntimeCollectors() Option {
	return func(c *config) { c.runtime = true }
}

// Handler returns the handler of a /metrics endpoint that serves every
// metric of g (a *prometheus.Registry, usually the one given to New), for
// queue/operator's WithMetrics or any http.ServeMux.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}
