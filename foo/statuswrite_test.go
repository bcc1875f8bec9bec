package foo_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// statusFault is an error an API server answers a status update with, as
// a transient or a lasting condition.
type statusFault struct {
	name string
	err  error
}

func statusFaults() []statusFault {
	return []statusFault{
		{name: "internal error", err: apierrors.NewInternalError(errors.New("etcd unavailable"))},
		{name: "timeout", err: apierrors.NewTimeoutError("request did not complete", 1)},
		{name: "forbidden", err: apierrors.NewForbidden(samplev1alpha1.Resource("foos"), "example-foo", errors.New("no permission on foos/status"))},
	}
}

// failStatusWrites makes every status update of a Foo fail with err while
// the returned switch is on; it starts on.
func failStatusWrites(f *fixture, err error) *atomic.Bool {
	failing := &atomic.Bool{}
	failing.Store(true)
	f.foos.PrependReactor("update", "foos", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && failing.Load() {
			return true, nil, err
		}
		return false, nil, nil
	})
	return failing
}

const statusUpdate = "update samplecontroller.k8s.io/v1alpha1/foos/status default/example-foo"

// A refusal whose status write keeps failing is retried until the status
// says so, but its Warning is recorded once, not on every retry.
func TestRefusalWarnedOnceWhileStatusWritesFail(t *testing.T) {
	foreign := deploymentFor(newFoo("example-foo", "web", nil), "web", 1, 1)
	foreign.OwnerReferences = nil
	refusals := []struct {
		name    string
		objects []runtime.Object
		reason  string
	}{
		{name: "invalid spec", objects: []runtime.Object{newFoo("example-foo", "", nil)}, reason: samplev1alpha1.ReasonInvalidSpec},
		{name: "foreign Deployment", objects: []runtime.Object{newFoo("example-foo", "web", ptr.To[int32](3)), foreign}, reason: samplev1alpha1.ReasonErrResourceExists},
	}
	for _, refusal := range refusals {
		for _, fault := range statusFaults() {
			t.Run(refusal.name+"/"+fault.name, func(t *testing.T) {
				f := newFixture(t, refusal.objects...)
				failing := failStatusWrites(f, fault.err)

				for attempt := range 3 {
					out := f.run(t, "example-foo")
					require.Error(t, out.Err, "attempt %d", attempt)
					assert.ErrorIs(t, out.Err, fault.err, "attempt %d returns the status write's error", attempt)
					assert.False(t, errors.Is(out.Err, &reconcile.TerminalError{}), "attempt %d is retried: the report has not reached the status", attempt)
					assert.Equal(t, []string{statusUpdate}, reconciletest.Describe(out.Writes), "attempt %d tries the status again", attempt)
				}
				assert.Len(t, f.recorder.Find(corev1.EventTypeWarning, refusal.reason), 1,
					"one Warning for one generation, however often the status write is retried: %v", f.recorder.Events())

				failing.Store(false)
				out := f.run(t, "example-foo")
				require.Error(t, out.Err)
				assert.True(t, errors.Is(out.Err, &reconcile.TerminalError{}), "once the status says so, the refusal is not retried: %v", out.Err)
				assert.Equal(t, []string{statusUpdate}, reconciletest.Describe(out.Writes))
				cond := meta.FindStatusCondition(getFoo(t, f, "example-foo").Status.Conditions, samplev1alpha1.ConditionReady)
				require.NotNil(t, cond)
				assert.Equal(t, refusal.reason, cond.Reason)
				assert.Len(t, f.recorder.Events(), 1, "no more events once the status is written: %v", f.recorder.Events())
			})
		}
	}
}

// An override whose following status write fails is reported by one Synced
// event, although the retry finds nothing left to override.
func TestSyncedRecordedOnceDespiteFailedStatusWrite(t *testing.T) {
	web := func() *samplev1alpha1.Foo { return newFoo("example-foo", "web", ptr.To[int32](3)) }
	overrides := []struct {
		name    string
		objects []runtime.Object
		// corrected reports whether the cache shows the override, so
		// that the retry sees nothing left to override.
		corrected func(f *fixture) bool
	}{
		{
			name:    "drifted replicas",
			objects: []runtime.Object{web(), deploymentFor(web(), "web", 1, 1)},
			corrected: func(f *fixture) bool {
				d, err := f.deployLister.Deployments(ns).Get("web")
				return err == nil && *d.Spec.Replicas == 3
			},
		},
		{
			name:    "stale Deployment of an earlier name",
			objects: []runtime.Object{newFoo("example-foo", "web-v2", ptr.To[int32](3)), deploymentFor(web(), "web", 3, 3)},
			corrected: func(f *fixture) bool {
				_, errNew := f.deployLister.Deployments(ns).Get("web-v2")
				_, errOld := f.deployLister.Deployments(ns).Get("web")
				return errNew == nil && apierrors.IsNotFound(errOld)
			},
		},
	}
	for _, override := range overrides {
		for _, fault := range statusFaults() {
			t.Run(override.name+"/"+fault.name, func(t *testing.T) {
				f := newFixture(t, override.objects...)
				failing := failStatusWrites(f, fault.err)

				out := f.run(t, "example-foo")
				require.ErrorIs(t, out.Err, fault.err, "the status write fails after the override")
				require.Eventually(t, func() bool { return override.corrected(f) }, eventually, time.Millisecond,
					"the informer sees the override")

				out = f.run(t, "example-foo")
				require.ErrorIs(t, out.Err, fault.err)
				assert.Equal(t, []string{statusUpdate}, reconciletest.Describe(out.Writes), "the retry has nothing left to override")
				failing.Store(false)
				out = f.run(t, "example-foo")
				require.NoError(t, out.Err)
				assert.Equal(t, []string{statusUpdate}, reconciletest.Describe(out.Writes))

				synced := f.recorder.Find(corev1.EventTypeNormal, foo.ReasonSynced)
				assert.Len(t, synced, 1, "one Synced event for one override: %v", f.recorder.Events())
				assert.Len(t, f.recorder.Events(), len(synced), "and no other event")
			})
		}
	}
}
