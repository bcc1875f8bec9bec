// Package metricstest reads metric series from a Prometheus registry in
// tests, so that a test can assert on what a controller counted:
//
//	reg := prometheus.NewRegistry()
//	m, err := metrics.New(reg)
//	require.NoError(t, err)
//	runController(t, queue.WithMetrics(m)) // the controller under test
//	n := metricstest.Value(t, reg, "controller_runtime_reconcile_total",
//		map[string]string{"controller": "foo", "result": "success"})
package metricstest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Value returns the value of the series of metric name whose labels are
// exactly labels: a counter's or gauge's value, or a histogram's or
// summary's sample count. It fails the test with t.Fatalf, listing the
// series of name that exist, when there is no such series or gathering
// fails.
func Value(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	v, err := Lookup(g, name, labels)
	if err != nil {
		t.Fatalf("metricstest: %v", err)
	}
	return v
}

// Lookup is Value that returns an error instead of failing a test, for
// polling a value until it reaches some number.
func Lookup(g prometheus.Gatherer, name string, labels map[string]string) (float64, error) {
	families, err := g.Gather()
	if err != nil {
		return 0, fmt.Errorf("gathering metrics: %w", err)
	}
	var seen []string
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if maps.Equal(got, labels) {
				return value(f.GetType(), m), nil
			}
			seen = append(seen, describe(got))
		}
	}
	if len(seen) == 0 {
		return 0, fmt.Errorf("no series of %s", name)
	}
	return 0, fmt.Errorf("no series %s%s; there are: %s", name, describe(labels), strings.Join(seen, ", "))
}

func value(typ dto.MetricType, m *dto.Metric) float64 {
	switch typ {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	case dto.MetricType_SUMMARY:
		return float64(m.GetSummary().GetSampleCount())
	default:
		return m.GetUntyped().GetValue()
	}
}

// describe renders labels as {a="1",b="2"}, sorted by name.
func describe(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, labels[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}
