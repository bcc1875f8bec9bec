package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// Names of the multi-cluster series (see the package documentation).
const (
	clusterSubsystem = "cluster"
	labelFleet       = "fleet"
	labelCluster     = "cluster"
)

var _ multicluster.Metrics = (*Recorder)(nil)

// clusterCollectors are the series of multicluster.Metrics.
type clusterCollectors struct {
	ready      *prometheus.GaugeVec
	failures   *prometheus.CounterVec
	reconciles *prometheus.CounterVec
	duration   *prometheus.HistogramVec
}

func newClusterCollectors() clusterCollectors {
	labels := []string{labelFleet, labelCluster}
	return clusterCollectors{
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ctrlkitNamespace, Subsystem: clusterSubsystem, Name: "ready",
			Help: "1 while a member cluster held by this replica is engaged and its caches are synced, else 0.",
		}, labels),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ctrlkitNamespace, Subsystem: clusterSubsystem, Name: "engage_failures_total",
			Help: "Failed attempts to engage a member cluster (client, engage function or cache sync).",
		}, labels),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ctrlkitNamespace, Subsystem: clusterSubsystem, Name: "reconciles_total",
			Help: "Reconciles of the keys of a member cluster, by result (success or error).",
		}, []string{labelFleet, labelCluster, labelResult}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ctrlkitNamespace, Subsystem: clusterSubsystem, Name: "reconcile_seconds",
			Help:    "Duration of the reconciles of the keys of a member cluster.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}, labels),
	}
}

// SetClusterReady sets ctrlkit_cluster_ready of fleet and cluster.
func (r *Recorder) SetClusterReady(fleet, cluster string, ready bool) {
	v := 0.0
	if ready {
		v = 1
	}
	r.cluster.ready.WithLabelValues(fleet, cluster).Set(v)
}

// IncEngageFailures adds one to ctrlkit_cluster_engage_failures_total.
func (r *Recorder) IncEngageFailures(fleet, cluster string) {
	r.cluster.failures.WithLabelValues(fleet, cluster).Inc()
}

// ObserveClusterReconcile counts a reconcile in
// ctrlkit_cluster_reconciles_total and observes d in
// ctrlkit_cluster_reconcile_seconds.
func (r *Recorder) ObserveClusterReconcile(fleet, cluster string, d time.Duration, failed bool) {
	result := "success"
	if failed {
		result = "error"
	}
	r.cluster.reconciles.WithLabelValues(fleet, cluster, result).Inc()
	r.cluster.duration.WithLabelValues(fleet, cluster).Observe(d.Seconds())
}

// ForgetCluster deletes every series of cluster in fleet, and the series
// of the watches of optional resources of the APIs named cluster
// (ctrlkit_api_watch_*, which have no fleet label).
func (r *Recorder) ForgetCluster(fleet, cluster string) {
	r.forgetAPIWatches(cluster)
	match := prometheus.Labels{labelFleet: fleet, labelCluster: cluster}
	r.cluster.ready.DeletePartialMatch(match)
	r.cluster.failures.DeletePartialMatch(match)
	r.cluster.reconciles.DeletePartialMatch(match)
	r.cluster.duration.DeletePartialMatch(match)
}
