package write_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// A trimmed Deployment scaled to zero (the cache keeps spec.replicas: 0);
// the controller hands the replicas over (an autoscaler takes them) by
// clearing them, and the API server defaults them to 1: the Deployment
// scales from 0 to 1, a change of a field the cache keeps and shows, and
// the update is Updated.
func TestTrimmedClearedFieldDefaultedByTheServerIsUpdated(t *testing.T) {
	e := newDeploymentEnv(t)
	ctx := reconciletest.Context(t)
	_, change, err := e.objects.Ensure(ctx, e.client(), webWant(), nginx(0, "nginx:1"))
	require.NoError(t, err)
	require.Equal(t, write.Updated, change)
	e.deliver(t)
	require.Equal(t, int32(0), *e.server(t).Spec.Replicas)

	// The API server's defaulting: no replicas means 1.
	c := webhookClient[*appsv1.Deployment]{Client: e.client(), hook: func(d *appsv1.Deployment) {
		if d.Spec.Replicas == nil {
			d.Spec.Replicas = ptrInt32(1)
		}
	}}
	before := e.server(t).ResourceVersion
	got, change, err := e.objects.Ensure(ctx, c, webWant(), func(d *appsv1.Deployment) error {
		d.Spec.Replicas = nil
		return nil
	})
	require.NoError(t, err)
	require.NotEqual(t, before, e.server(t).ResourceVersion, "the server changed the object")
	require.Equal(t, int32(1), *got.Spec.Replicas, "the server scaled the Deployment from 0 to 1")
	assert.Equal(t, write.Updated, change, "the Deployment went from 0 replicas to 1, a field the cache shows")
}
