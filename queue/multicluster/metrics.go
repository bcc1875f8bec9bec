package multicluster

import "time"

// Metrics receives a fleet's measurements, labelled by fleet and cluster.
// A cluster's series are dropped (Forget) when it leaves the fleet or this
// replica, so their number is bounded by the members this replica holds.
// metrics.Recorder implements it.
type Metrics interface {
	// SetClusterReady records whether cluster is engaged and synced.
	SetClusterReady(fleet, cluster string, ready bool)
	// IncEngageFailures counts a failed attempt to engage cluster.
	IncEngageFailures(fleet, cluster string)
	// ObserveClusterReconcile records one reconcile of a key of cluster
	// and whether it failed.
	ObserveClusterReconcile(fleet, cluster string, d time.Duration, failed bool)
	// ForgetCluster drops the series of cluster.
	ForgetCluster(fleet, cluster string)
}

type noopMetrics struct{}

func (noopMetrics) SetClusterReady(string, string, bool)                        {}
func (noopMetrics) IncEngageFailures(string, string)                            {}
func (noopMetrics) ObserveClusterReconcile(string, string, time.Duration, bool) {}
func (noopMetrics) ForgetCluster(string, string)                                {}
