package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// A fleet's member that left has every series removed (ForgetCluster:
// "deletes every series of cluster"; its APIs' shutdown deletes its state
// series): its ctrlkit_api_watch_stops_total must go too, or members that
// come and go leave a series each forever.
func TestReviewAPIWatchStopsForgottenWithMember(t *testing.T) {
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
