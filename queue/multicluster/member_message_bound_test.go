package multicluster_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// Results.Status bounds each member entry's message as it bounds the
// condition's (1024 characters): a member whose error is long (an exec
// plugin's or a webhook's output, a certificate chain) does not make every
// write of the hub object's status that long.
func TestMemberEntryMessageBounded(t *testing.T) {
	c := newClusters("a")
	f := startFleet(t, c, newRecorder().copyCluster, multicluster.WithProbeInterval(20*time.Millisecond), multicluster.WithSyncTimeout(200*time.Millisecond))
	results, err := multicluster.NewResults[string](f.fleet, newAdds())
	require.NoError(t, err)
	f.members.Set("a", c.config("a"))
	f.members.Synced()
	f.ready(t, "a")
	f.members.(multicluster.Refuser).Refuse("b", errors.New("kubeconfig not allowed: "+strings.Repeat("x", 64<<10)))

	hub := cacheName("app", "web")
	statuses, cond := results.Status(hub, 1, []string{"a", "b"})
	require.Len(t, statuses, 2)
	assert.LessOrEqual(t, len([]rune(cond.Message)), 1024, "the condition's message is bounded")
	assert.Equal(t, multicluster.ReasonUnreachable, statuses[1].Reason)
	assert.LessOrEqual(t, len([]rune(statuses[1].Message)), 1024, "a member entry's message is bounded as the condition's is")
}
