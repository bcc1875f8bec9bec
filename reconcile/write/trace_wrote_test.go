package write_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// applyMode is the apply configuration of the settings with mode.
func applyMode(mode string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(key.Name, key.Namespace).WithData(map[string]string{"mode": mode})
}

// ctrlkit.wrote says whether the reconcile sent a write, and
// tracing.DropEmpty keeps only the reconciles that did: a write marks the
// reconcile only when its request is sent. A finalizer's reconcile that
// deletes its children on every pass while they terminate sends nothing,
// and writes nothing.
func TestDeleteThatSendsNothingIsNoWrite(t *testing.T) {
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

// Every write of Objects marks the reconcile exactly when it sends a
// request: not when it finds nothing to send or refuses to send.
func TestWriteMarkFollowsTheRequestsSent(t *testing.T) {
	patch := []byte(`{"data":{"mode":"p"}}`)
	for _, tc := range []struct {
		name  string
		write func(ctx context.Context, e *env, created *corev1.ConfigMap) error
		sends bool
	}{{
		name: "delete",
		write: func(ctx context.Context, e *env, created *corev1.ConfigMap) error {
			return e.objects.Delete(ctx, e.client(), created)
		},
		sends: true,
	}, {
		name: "delete of an object being deleted",
		write: func(ctx context.Context, e *env, created *corev1.ConfigMap) error {
			terminating := created.DeepCopy()
			now := metav1.Now()
			terminating.DeletionTimestamp = &now
			return e.objects.Delete(ctx, e.client(), terminating)
		},
	}, {
		name: "patch",
		write: func(ctx context.Context, e *env, created *corev1.ConfigMap) error {
			_, err := e.objects.Patch(ctx, e.client(), created, types.MergePatchType, patch)
			return err
		},
		sends: true,
	}, {
		name: "patch of an object older than the last write",
		write: func(ctx context.Context, e *env, created *corev1.ConfigMap) error {
			if _, _, err := e.objects.Update(reconciletest.Context(t), e.client(), created, setMode("b")); err != nil {
				return err
			}
			e.kube.ClearActions()
			_, err := e.objects.Patch(ctx, e.client(), created, types.MergePatchType, patch)
			if err == nil {
				t.Error("a patch of an object older than the last write is refused")
			}
			return nil
		},
	}, {
		name: "update",
		write: func(ctx context.Context, e *env, created *corev1.ConfigMap) error {
			_, _, err := e.objects.Update(ctx, e.client(), created, setMode("b"))
			return err
		},
		sends: true,
	}, {
		name: "update that changes nothing",
		write: func(ctx context.Context, e *env, created *corev1.ConfigMap) error {
			_, _, err := e.objects.Update(ctx, e.client(), created, setMode("a"))
			return err
		},
	}, {
		name: "apply",
		write: func(ctx context.Context, e *env, _ *corev1.ConfigMap) error {
			_, _, err := write.Apply(ctx, e.objects, e.kube.CoreV1().ConfigMaps("ns"), key, applyMode("b"), "ctrl")
			return err
		},
		sends: true,
	}, {
		name: "apply of what was applied",
		write: func(ctx context.Context, e *env, created *corev1.ConfigMap) error {
			applied, _, err := write.Apply(reconciletest.Context(t), e.objects, e.kube.CoreV1().ConfigMaps("ns"), key, applyMode("b"), "ctrl")
			if err != nil {
				return err
			}
			e.deliver(t, applied)
			e.kube.ClearActions()
			_, _, err = write.Apply(ctx, e.objects, e.kube.CoreV1().ConfigMaps("ns"), key, applyMode("b"), "ctrl")
			return err
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			created, _, err := e.objects.Ensure(reconciletest.Context(t), e.client(), settings(), setMode("a"))
			require.NoError(t, err)
			e.deliver(t, created)
			e.kube.ClearActions()
			ctx, wrote := tracing.WithWriteMark(reconciletest.Context(t))
			require.NoError(t, tc.write(ctx, e, created))
			sent := reconciletest.WriteActions(&e.kube.Fake)
			assert.Equal(t, tc.sends, len(sent) > 0, "requests sent: %v", sent)
			assert.Equal(t, tc.sends, wrote(), "the reconcile is marked as one that wrote")
		})
	}
}
