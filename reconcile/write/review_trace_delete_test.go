package write_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// review: ctrlkit.wrote is documented as whether the reconcile sent a
// write, and tracing.DropEmpty keeps only the reconciles that did. Delete
// marks the reconcile as one that wrote before it decides to send
// nothing: for an object already being deleted (a finalizer's reconcile
// that deletes its children on every pass while they terminate), nothing
// is sent, yet the reconcile's span says it wrote and DropEmpty keeps it.
func TestReviewDeleteThatSendsNothingIsNoWrite(t *testing.T) {
	e := newEnv(t)
	created, _, err := e.objects.Ensure(reconciletest.Context(t), e.client(), settings(), setMode("a"))
	require.NoError(t, err)
	e.deliver(t, created)
	terminating := created.DeepCopy()
	now := metav1.Now()
	terminating.DeletionTimestamp = &now

	ctx, wrote := tracing.WithWriteMark(reconciletest.Context(t))
	e.kube.ClearActions()
	require.NoError(t, e.objects.Delete(ctx, e.client(), terminating))
	require.Empty(t, reconciletest.WriteActions(&e.kube.Fake), "nothing sent for an object already being deleted")
	assert.False(t, wrote(), "a Delete that sent nothing marks the reconcile as one that wrote")
}
