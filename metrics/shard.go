package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctrlkit/ctrlkit/queue/shard"
)

// Names of the sharding series (see the package documentation).
const (
	ctrlkitNamespace = "ctrlkit"
	shardSubsystem   = "shard"
	labelGroup       = "group"
)

var _ shard.Metrics = (*Recorder)(nil)

// shardCollectors are the series of shard.Metrics.
type shardCollectors struct {
	members   *prometheus.GaugeVec
	ownedKeys *prometheus.GaugeVec
	handoffs  *prometheus.CounterVec
	takeover  *prometheus.HistogramVec
}

func newShardCollectors() shardCollectors {
	group := []string{labelGroup}
	return shardCollectors{
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ctrlkitNamespace, Subsystem: shardSubsystem, Name: "members",
			Help: "Live members of the shard group this replica sees, itself included.",
		}, group),
		ownedKeys: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ctrlkitNamespace, Subsystem: shardSubsystem, Name: "owned_keys",
			Help: "Keys of a controller this replica owns and may reconcile.",
		}, []string{labelGroup, labelController}),
		handoffs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ctrlkitNamespace, Subsystem: shardSubsystem, Name: "handoffs_total",
			Help: "Changes of the member list this replica works under, each published after the keys it gave up were released.",
		}, group),
		takeover: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ctrlkitNamespace, Subsystem: shardSubsystem, Name: "takeover_seconds",
			Help:    "Time from the last sign of life of a member that left to this replica owning a share of its keys.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 20, 30, 45, 60, 120},
		}, group),
	}
}

// SetMembers sets ctrlkit_shard_members of group to n.
func (r *Recorder) SetMembers(group string, n int) {
	r.shard.members.WithLabelValues(group).Set(float64(n))
}

// SetOwnedKeys sets ctrlkit_shard_owned_keys of group and controller to n.
func (r *Recorder) SetOwnedKeys(group, controller string, n int) {
	r.shard.ownedKeys.WithLabelValues(group, controller).Set(float64(n))
}

// IncHandoffs adds one to ctrlkit_shard_handoffs_total of group.
func (r *Recorder) IncHandoffs(group string) { r.shard.handoffs.WithLabelValues(group).Inc() }

// ObserveTakeover observes d in ctrlkit_shard_takeover_seconds of group.
func (r *Recorder) ObserveTakeover(group string, d time.Duration) {
	r.shard.takeover.WithLabelValues(group).Observe(d.Seconds())
}
