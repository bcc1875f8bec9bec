package metrics_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/queue"
)

func ExampleNew() {
	// Use a registry of your own (served with promhttp.HandlerFor) or
	// prometheus.DefaultRegisterer; New never picks one by itself.
	reg := prometheus.NewRegistry()
	rec, err := metrics.New(reg)
	if err != nil {
		fmt.Println(err)
		return
	}

	// One Recorder serves every controller; hand it to each worker loop as
	// its queue.Metrics. Here the loop's calls are made by hand.
	var m queue.Metrics = rec
	m.SetMaxWorkers("foo", 2)
	m.AddActiveWorkers("foo", 1)
	m.ObserveReconcile("foo", queue.Observation{Outcome: queue.OutcomeSuccess, Duration: 20 * time.Millisecond})
	m.AddActiveWorkers("foo", -1)
	m.ObserveReconcile("foo", queue.Observation{Outcome: queue.OutcomeError, Terminal: true, Duration: time.Second})
	m.SetMaxWorkers("bar", 1)

	families, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range families {
		for _, s := range mf.GetMetric() {
			var labels []string
			for _, lp := range s.GetLabel() {
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
			}
			var value float64
			switch {
			case s.GetCounter() != nil:
				value = s.GetCounter().GetValue()
			case s.GetGauge() != nil:
				value = s.GetGauge().GetValue()
			case s.GetHistogram() != nil:
				value = float64(s.GetHistogram().GetSampleCount())
			}
			if value != 0 {
				fmt.Printf("%s{%s} %g\n", mf.GetName(), strings.Join(labels, ","), value)
			}
		}
	}

	// Output:
	// controller_runtime_max_concurrent_reconciles{controller=bar} 1
	// controller_runtime_max_concurrent_reconciles{controller=foo} 2
	// controller_runtime_reconcile_errors_total{controller=foo} 1
	// controller_runtime_reconcile_time_seconds{controller=foo} 2
	// controller_runtime_reconcile_total{controller=foo,result=error} 1
	// controller_runtime_reconcile_total{controller=foo,result=success} 1
	// controller_runtime_terminal_reconcile_errors_total{controller=foo} 1
}
