package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// Names of the series of watches of optional APIs (see the package
// documentation).
const (
	apiWatchSubsystem = "api_watch"
	labelResource     = "resource"
	labelState        = "state"
)

var _ optional.Metrics = (*Recorder)(nil)

// apiWatchCollectors are the series of optional.Metrics.
type apiWatchCollectors struct {
	state *prometheus.GaugeVec
	stops *prometheus.CounterVec
}

func newAPIWatchCollectors() apiWatchCollectors {
	return apiWatchCollectors{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ctrlkitNamespace, Subsystem: apiWatchSubsystem, Name: "state",
			Help: "1 for the state a watch of an optional resource is in (waiting for its API, running, or stopped after its API went away), 0 for the others.",
		}, []string{labelCluster, labelResource, labelState}),
		stops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ctrlkitNamespace, Subsystem: apiWatchSubsystem, Name: "stops_total",
			Help: "Watches of an optional resource stopped because their API was no longer served.",
		}, []string{labelCluster, labelResource}),
	}
}

// SetAPIWatchState sets ctrlkit_api_watch_state of cluster and resource
// to 1 for state and 0 for the other states.
func (r *Recorder) SetAPIWatchState(cluster, resource string, state optional.State) {
	for _, s := range optional.States {
		v := 0.0
		if s == state {
			v = 1
		}
		r.apiWatch.state.WithLabelValues(cluster, resource, string(s)).Set(v)
	}
}

// IncAPIWatchStops adds one to ctrlkit_api_watch_stops_total of cluster
// and resource.
func (r *Recorder) IncAPIWatchStops(cluster, resource string) {
	r.apiWatch.stops.WithLabelValues(cluster, resource).Inc()
}

// DeleteAPIWatchState removes the series of cluster and resource, its
// ctrlkit_api_watch_state and its ctrlkit_api_watch_stops_total: the
// watch's APIs shut down (the process stops, or the member cluster left
// the fleet), so that members that come and go leave no series behind. A
// member's APIs started again count their stops from zero.
func (r *Recorder) DeleteAPIWatchState(cluster, resource string) {
	for _, s := range optional.States {
		r.apiWatch.state.DeleteLabelValues(cluster, resource, string(s))
	}
	r.apiWatch.stops.DeleteLabelValues(cluster, resource)
}

// forgetAPIWatches deletes the series of every watch of an optional
// resource of cluster.
func (r *Recorder) forgetAPIWatches(cluster string) {
	match := prometheus.Labels{labelCluster: cluster}
	r.apiWatch.state.DeletePartialMatch(match)
	r.apiWatch.stops.DeletePartialMatch(match)
}
