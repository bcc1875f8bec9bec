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

// Value returns the value of the one series of metric name that labels
// select: a counter's or gauge's value, or a histogram's or summary's
// sample count. labels select series as the equality matchers of a PromQL
// selector do (name{k1="v1",k2="v2"}): a series is selected when each
// label given has the value given, labels not given may have any value,
// and a label given with the empty value selects the series that lack it
// (Prometheus does not tell an empty label from a missing one). So
// {"name": "foo"} selects workqueue_depth{controller="foo",name="foo",
// priority=""} when it is the only series named foo.
//
// Value fails the test with t.Fatalf, listing the series of name that
// exist, when labels select no series or more than one (give more labels
// to pick one), or when gathering fails.
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
	var seen, selected []string
	var v float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			seen = append(seen, describe(got))
			if selects(labels, got) {
				selected = append(selected, describe(got))
				v = value(f.GetType(), m)
			}
		}
	}
	switch {
	case len(seen) == 0:
		return 0, fmt.Errorf("no series of %s", name)
	case len(selected) == 0:
		return 0, fmt.Errorf("no series %s%s; there are: %s", name, describe(labels), strings.Join(seen, ", "))
	case len(selected) > 1:
		return 0, fmt.Errorf("%d series %s%s, give more labels to select one: %s",
			len(selected), name, describe(labels), strings.Join(selected, ", "))
	}
	return v, nil
}

// selects reports whether the matchers labels select a series with the
// labels series. A label the series lacks reads as empty, as in Prometheus.
func selects(labels, series map[string]string) bool {
	for k, want := range labels {
		if series[k] != want {
			return false
		}
	}
	return true
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
