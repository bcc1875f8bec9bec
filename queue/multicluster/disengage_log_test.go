package multicluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// The log says why each cluster was disengaged: a member deleted from the
// fleet left it (ErrLeft), one still a member when the Fleet stops was
// stopped.
func TestDisengagedLogSaysWhy(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	c := newClusters("kept", "deleted")
	p := newProvider()
	engage := func(_ context.Context, cl *multicluster.Cluster) (*member, error) {
		return &member{name: cl.Name, client: cl.Client}, nil
	}
	fleet, err := multicluster.New("test", p, engage, multicluster.WithClients(c.newClient))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- fleet.Run(ctx) }()
	m := <-p.members
	m.Set("kept", c.config("kept"))
	m.Set("deleted", c.config("deleted"))
	m.Synced()
	for _, name := range []string{"kept", "deleted"} {
		require.Eventually(t, func() bool { st, _ := fleet.Status(name); return st.Ready }, waitFor, time.Millisecond, "cluster %s ready", name)
	}
	m.Delete("deleted")
	require.Eventually(t, func() bool { _, held := fleet.Status("deleted"); return !held }, waitFor, time.Millisecond, "the deleted member is removed")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("the fleet did not stop")
	}

	underlier, ok := logger.GetSink().(ktesting.Underlier)
	require.True(t, ok)
	causes := map[string]error{}
	for _, e := range underlier.GetBuffer().Data() {
		if e.Message != "Cluster disengaged" {
			continue
		}
		kv := map[any]any{}
		for _, l := range [][]any{e.WithKVList, e.ParameterKVList} {
			for i := 0; i+1 < len(l); i += 2 {
				kv[l[i]] = l[i+1]
			}
		}
		cluster, _ := kv["cluster"].(string)
		cause, _ := kv["cause"].(error)
		causes[cluster] = cause
	}
	require.Len(t, causes, 2, "one line per cluster")
	assert.ErrorIs(t, causes["deleted"], multicluster.ErrLeft, "the member deleted left")
	require.Error(t, causes["kept"])
	assert.False(t, errors.Is(causes["kept"], multicluster.ErrLeft), "the member kept did not leave: %v", causes["kept"])
	assert.Contains(t, causes["kept"].Error(), "stopped")
}
