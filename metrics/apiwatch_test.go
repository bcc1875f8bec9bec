package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// The state gauge of a watch of an optional resource is 1 for its state
// only; its stops are counted.
func TestAPIWatchSeries(t *testing.T) {
	rec, reg := newRecorder(t)
	const res = "widgets.example.com/v1"
	rec.SetAPIWatchState("", res, optional.Waiting)
	rec.SetAPIWatchState("", res, optional.Running)
	rec.SetAPIWatchState("", res, optional.Stopped)
	rec.IncAPIWatchStops("", res)
	rec.SetAPIWatchState("", res, optional.Running)
	rec.SetAPIWatchState("west", res, optional.Waiting)
	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ctrlkit_api_watch_state 1 for the state a watch of an optional resource is in (waiting for its API, running, or stopped after its API went away), 0 for the others.
# TYPE ctrlkit_api_watch_state gauge
ctrlkit_api_watch_state{cluster="",resource="widgets.example.com/v1",state="running"} 1
ctrlkit_api_watch_state{cluster="",resource="widgets.example.com/v1",state="stopped"} 0
ctrlkit_api_watch_state{cluster="",resource="widgets.example.com/v1",state="waiting"} 0
ctrlkit_api_watch_state{cluster="west",resource="widgets.example.com/v1",state="running"} 0
ctrlkit_api_watch_state{cluster="west",resource="widgets.example.com/v1",state="stopped"} 0
ctrlkit_api_watch_state{cluster="west",resource="widgets.example.com/v1",state="waiting"} 1
# HELP ctrlkit_api_watch_stops_total Watches of an optional resource stopped because their API was no longer served.
# TYPE ctrlkit_api_watch_stops_total counter
ctrlkit_api_watch_stops_total{cluster="",resource="widgets.example.com/v1"} 1
`), "ctrlkit_api_watch_state", "ctrlkit_api_watch_stops_total")
	require.NoError(t, err)
	assert.Len(t, optional.States, 3)
}

// The state series of a watch whose APIs shut down are removed; the other
// clusters' stay.
func TestAPIWatchStateDeleted(t *testing.T) {
	rec, reg := newRecorder(t)
	const res = "widgets.example.com/v1"
	rec.SetAPIWatchState("west", res, optional.Running)
	rec.SetAPIWatchState("east", res, optional.Waiting)
	rec.DeleteAPIWatchState("west", res)
	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ctrlkit_api_watch_state 1 for the state a watch of an optional resource is in (waiting for its API, running, or stopped after its API went away), 0 for the others.
# TYPE ctrlkit_api_watch_state gauge
ctrlkit_api_watch_state{cluster="east",resource="widgets.example.com/v1",state="running"} 0
ctrlkit_api_watch_state{cluster="east",resource="widgets.example.com/v1",state="stopped"} 0
ctrlkit_api_watch_state{cluster="east",resource="widgets.example.com/v1",state="waiting"} 1
`), "ctrlkit_api_watch_state")
	require.NoError(t, err)
}
