package metrics

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// HandlerOption configures Handler. A nil HandlerOption is ignored.
type HandlerOption func(*handlerConfig)

type handlerConfig struct{ runtime bool }

// WithRuntimeCollectors registers the Go runtime collector (go_*) and the
// process collector (process_*) on the registry, as controller-runtime's
// default registry has them. Collectors already registered are kept.
func WithRuntimeCollectors() HandlerOption {
	return func(c *handlerConfig) { c.runtime = true }
}

// Handler returns the handler of a /metrics endpoint that serves every
// metric of reg, for queue/operator's WithMetrics or any http.ServeMux. It
// fails only when a collector of WithRuntimeCollectors cannot be
// registered.
func Handler(reg *prometheus.Registry, opts ...HandlerOption) (http.Handler, error) {
	if reg == nil {
		return nil, errors.New("metrics: registry is nil")
	}
	var c handlerConfig
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	if c.runtime {
		for _, col := range []prometheus.Collector{
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		} {
			var already prometheus.AlreadyRegisteredError
			if err := reg.Register(col); err != nil && !errors.As(err, &already) {
				return nil, fmt.Errorf("metrics: registering the runtime collectors: %w", err)
			}
		}
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}), nil
}
