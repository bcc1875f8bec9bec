package multicluster_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/shard"
)

// With WithSharding each replica holds its own members' results only, so
// no replica could build a hub object's status over every member (each
// would list the others not held, and never report Ready): NewResults
// refuses a sharded Fleet, saying why and what to run instead.
func TestResultsRefuseShardedFleet(t *testing.T) {
	m, err := shard.New(shard.Config{Client: fake.NewClientset(), Namespace: "fleet-system", Group: "copier", Identity: "a"})
	require.NoError(t, err)
	fleet, err := multicluster.New("copier", newProvider(), func(context.Context, *multicluster.Cluster) (*member, error) { return &member{}, nil }, multicluster.WithSharding(m))
	require.NoError(t, err)

	results, err := multicluster.NewResults[string](fleet, newAdds())
	require.Error(t, err, "a sharded fleet cannot aggregate the status of every member in one replica")
	assert.Nil(t, results)
	assert.ErrorContains(t, err, "WithSharding")
	assert.ErrorContains(t, err, "unsharded")
}
