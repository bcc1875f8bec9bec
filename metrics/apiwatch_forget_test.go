package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/metrics"
)

// A fleet's member that left has every series removed (ForgetCluster:
// "deletes every series of cluster"; its APIs' shutdown deletes its state
// series): its ctrlkit_api_watch_stops_total must go too, or members that
// come and go leave a series each forever.
func TestAPIWatchStopsForgottenWithMember(t *testing.T) {
	rec, reg := newRecorder(t)
	const res = "widgets.example.com/v1"
	rec.IncAPIWatchStops("west", res)
	// The member leaves: its APIs shut down, then the fleet forgets it.
	rec.DeleteAPIWatchState("west", res)
	rec.ForgetCluster("fleet", "west")
	n, err := testutil.GatherAndCount(reg, "ctrlkit_api_watch_stops_total", "ctrlkit_api_watch_state")
	require.NoError(t, err)
	require.Zero(t, n, "series of api_watch left for a member that left the fleet")
}

// Each way a member goes (its APIs shut down, or the fleet forgets it)
// removes every api_watch series of that member, and only of that member.
func TestAPIWatchSeriesRemovedWithMember(t *testing.T) {
	const res = "widgets.example.com/v1"
	for _, tc := range []struct {
		name  string
		leave func(rec *metrics.Recorder)
	}{
		{"APIs shut down", func(rec *metrics.Recorder) { rec.DeleteAPIWatchState("west", res) }},
		{"fleet forgets the member", func(rec *metrics.Recorder) { rec.ForgetCluster("fleet", "west") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, reg := newRecorder(t)
			for _, cluster := range []string{"west", "east"} {
				rec.SetAPIWatchState(cluster, res, optional.Stopped)
				rec.IncAPIWatchStops(cluster, res)
			}
			tc.leave(rec)
			err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ctrlkit_api_watch_state 1 for the state a watch of an optional resource is in (waiting for its API, running, or stopped after its API went away), 0 for the others.
# TYPE ctrlkit_api_watch_state gauge
ctrlkit_api_watch_state{cluster="east",resource="widgets.example.com/v1",state="running"} 0
ctrlkit_api_watch_state{cluster="east",resource="widgets.example.com/v1",state="stopped"} 1
ctrlkit_api_watch_state{cluster="east",resource="widgets.example.com/v1",state="waiting"} 0
# HELP ctrlkit_api_watch_stops_total Watches of an optional resource stopped because their API was no longer served.
# TYPE ctrlkit_api_watch_stops_total counter
ctrlkit_api_watch_stops_total{cluster="east",resource="widgets.example.com/v1"} 1
`), "ctrlkit_api_watch_state", "ctrlkit_api_watch_stops_total")
			require.NoError(t, err)
		})
	}
}
