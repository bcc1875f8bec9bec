package multicluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
)

// Status.Since is when Ready or Err last changed: failed attempts with the
// same error as the last do not move it, so a member that has not answered
// for an hour says so, not that it stopped answering at most
// DefaultRetryMaxDelay ago.
func TestStatusSinceKeptAcrossFailedAttemptsWithTheSameError(t *testing.T) {
	provider := &queuetest.Provider{}
	provider.Set("west", &rest.Config{Host: "https://west"})
	provider.Synced()
	fleet, err := multicluster.New("since", provider, func(context.Context, *multicluster.Cluster) (struct{}, error) { return struct{}{}, nil },
		multicluster.WithClients(func(context.Context, string, *rest.Config) (kubernetes.Interface, error) {
			return nil, errors.New("dial tcp: lookup west: no such host")
		}),
		multicluster.WithRetryBackoff(10*time.Millisecond, 20*time.Millisecond))
	require.NoError(t, err)
	queuetest.StartFleet(t, fleet, nil)

	var first multicluster.Status
	require.Eventually(t, func() bool { first, _ = fleet.Status("west"); return first.Failures >= 1 }, waitFor, time.Millisecond)
	var later multicluster.Status
	require.Eventually(t, func() bool { later, _ = fleet.Status("west"); return later.Failures >= first.Failures+5 }, waitFor, time.Millisecond)
	require.Equal(t, first.Err.Error(), later.Err.Error(), "the same error")
	require.False(t, later.Ready)
	require.Equal(t, first.Since, later.Since, "Since moved though neither Ready nor Err changed (%d failures, the same error)", later.Failures)
}
