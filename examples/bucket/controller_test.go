package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
	storagev1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	"github.com/ctrlkit/ctrlkit/examples/bucket/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/examples/bucket/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/examples/bucket/store"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitFor bounds the polls of these tests; a loaded machine needs the margin.
const waitFor = 20 * time.Second

// fixture runs the Bucket controller over a strict fake clientset and a
// storage service on httptest, which the test can make fail.
type fixture struct {
	client *fake.Clientset
	store  *store.Client
	// down answers every request with 503, lost with a plain 404, as a
	// proxy in front of a store that went away would.
	down, lost atomic.Bool
	// deaf answers the change notifications' long polls with 503.
	deaf     atomic.Bool
	recorder *eventstest.Recorder
	outcomes *outcomes
}

// outcomes counts the controller's reconciles.
type outcomes struct {
	queue.NoopMetrics
	total, errors atomic.Int64
}

func (o *outcomes) ObserveReconcile(_ string, obs queue.Observation) {
	o.total.Add(1)
	if obs.Outcome == queue.OutcomeError {
		o.errors.Add(1)
	}
}

func start(t *testing.T, resync time.Duration) *fixture {
	t.Helper()
	srv, err := store.NewServer(filepath.Join(t.TempDir(), "buckets.json"))
	require.NoError(t, err)
	f := &fixture{client: fake.NewClientset(), recorder: eventstest.NewRecorder(), outcomes: &outcomes{}}
	httpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() || f.deaf.Load() && r.URL.Path == "/changes" {
			http.Error(w, `{"error":"down for maintenance"}`, http.StatusServiceUnavailable)
			return
		}
		if f.lost.Load() {
			http.NotFound(w, r)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); httpSrv.Close() })
	f.store = store.NewClient(httpSrv.URL, nil)
	reconciletest.Strict(f.client)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // runs before the server closes: the notifications stop first
	factory := externalversions.NewSharedInformerFactory(f.client, 0)
	ctrl, err := newController(ctx, f.store, f.client, factory.Storage().V1().Buckets(), f.recorder, resync, queue.WithMetrics(f.outcomes))
	require.NoError(t, err)
	queuetest.Start(t, ctrl, operator.WithInformers(factory))
	return f
}

func (f *fixture) create(t *testing.T, name, region string) {
	t.Helper()
	_, err := f.client.StorageV1().Buckets().Create(context.Background(), &storagev1.Bucket{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.BucketSpec{Region: region}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func (f *fixture) bucket(t *testing.T, name string) (*storagev1.Bucket, bool) {
	t.Helper()
	b, err := f.client.StorageV1().Buckets().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	return b, true
}

func (f *fixture) stored(t *testing.T, name string) (store.Bucket, bool) {
	t.Helper()
	b, found, err := f.store.Get(context.Background(), name)
	require.NoError(t, err)
	return b, found
}

// ready returns the Ready condition of the named Bucket, if any.
func (f *fixture) ready(t *testing.T, name string) *metav1.Condition {
	t.Helper()
	b, ok := f.bucket(t, name)
	if !ok {
		return nil
	}
	return meta.FindStatusCondition(b.Status.Conditions, storagev1.ConditionReady)
}

func (f *fixture) waitInStore(t *testing.T, name string, want store.Spec, why string) {
	t.Helper()
	require.Eventually(t, func() bool {
		b, found := f.stored(t, name)
		return found && b.Spec == want
	}, waitFor, 5*time.Millisecond, why)
}

func TestBucketLifecycle(t *testing.T) {
	// A long resync: only the notifications restore changed buckets.
	f := start(t, time.Hour)
	f.create(t, "photos", "eu-west-1")
	f.waitInStore(t, "photos", store.Spec{Region: "eu-west-1"}, "created in the store")
	require.Eventually(t, func() bool {
		c := f.ready(t, "photos")
		return c != nil && c.Status == metav1.ConditionTrue
	}, waitFor, 5*time.Millisecond, "Ready")
	b, _ := f.bucket(t, "photos")
	assert.Equal(t, []string{storagev1.Finalizer}, b.Finalizers)
	assert.Equal(t, b.Generation, b.Status.ObservedGeneration)
	stored, _ := f.stored(t, "photos")
	assert.Equal(t, string(b.UID), stored.Owner, "the bucket is owned by its Bucket")

	// The spec changes: the store follows.
	b.Spec.Versioning = true
	_, err := f.client.StorageV1().Buckets().Update(context.Background(), b, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.waitInStore(t, "photos", store.Spec{Region: "eu-west-1", Versioning: true}, "the spec change reaches the store")

	// Changed and removed behind the operator's back: restored.
	_, err = f.store.Put(context.Background(), "photos", store.Spec{Region: "us-east-1"})
	require.NoError(t, err)
	f.waitInStore(t, "photos", store.Spec{Region: "eu-west-1", Versioning: true}, "a changed bucket is restored")
	require.NoError(t, f.store.Delete(context.Background(), "photos"))
	f.waitInStore(t, "photos", store.Spec{Region: "eu-west-1", Versioning: true}, "a removed bucket is restored")

	// Deleted: the bucket goes from the store, then the Bucket.
	require.NoError(t, f.client.StorageV1().Buckets().Delete(context.Background(), "photos", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { _, found := f.bucket(t, "photos"); return !found }, waitFor, 5*time.Millisecond, "the Bucket goes")
	_, found := f.stored(t, "photos")
	assert.False(t, found, "the bucket is gone from the store")
	assert.Empty(t, f.recorder.Find(corev1.EventTypeWarning, ""), "no Warning when all goes well")
}

func TestDeletionPolicyRetainKeepsTheBucket(t *testing.T) {
	f := start(t, time.Hour)
	_, err := f.client.StorageV1().Buckets().Create(context.Background(), &storagev1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: "kept"},
		Spec: storagev1.BucketSpec{Region: "eu-west-1", DeletionPolicy: storagev1.DeletionPolicyRetain}}, metav1.CreateOptions{})
	require.NoError(t, err)
	f.waitInStore(t, "kept", store.Spec{Region: "eu-west-1"}, "created in the store")
	require.Eventually(t, func() bool { b, _ := f.bucket(t, "kept"); return len(b.Finalizers) == 1 }, waitFor, 5*time.Millisecond)
	b, _ := f.bucket(t, "kept")

	require.NoError(t, f.client.StorageV1().Buckets().Delete(context.Background(), "kept", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { _, found := f.bucket(t, "kept"); return !found }, waitFor, 5*time.Millisecond, "the Bucket goes")
	stored, found := f.stored(t, "kept")
	require.True(t, found, "the bucket stays in the store")
	assert.Equal(t, string(b.UID), stored.Owner, "still owned by the deleted Bucket, so no other Bucket takes it over")
	assert.Empty(t, f.recorder.Find(corev1.EventTypeWarning, ""))
}

func TestDeletionWhileTheStoreIsDown(t *testing.T) {
	tests := []struct {
		name string
		// fail makes the store fail, or (false) work again.
		fail func(f *fixture, failing bool)
	}{
		{name: "the store answers 503", fail: func(f *fixture, failing bool) { f.down.Store(failing) }},
		// A 404 that is not the store's "no such bucket" does not say the
		// bucket is gone: the finalizer stays until the store says so.
		{name: "a proxy answers a plain 404", fail: func(f *fixture, failing bool) { f.lost.Store(failing) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := start(t, time.Hour)
			f.create(t, "logs", "eu-west-1")
			f.waitInStore(t, "logs", store.Spec{Region: "eu-west-1"}, "created in the store")
			require.Eventually(t, func() bool { b, _ := f.bucket(t, "logs"); return len(b.Finalizers) == 1 }, waitFor, 5*time.Millisecond)

			tt.fail(f, true)
			require.NoError(t, f.client.StorageV1().Buckets().Delete(context.Background(), "logs", metav1.DeleteOptions{}))
			require.Eventually(t, func() bool {
				c := f.ready(t, "logs")
				return c != nil && c.Status == metav1.ConditionFalse && c.Reason == storagev1.ReasonStoreUnavailable
			}, waitFor, 5*time.Millisecond, "Ready=False says the store is unavailable")
			b, found := f.bucket(t, "logs")
			require.True(t, found, "the Bucket stays while the cleanup fails")
			assert.NotNil(t, b.DeletionTimestamp)
			assert.Equal(t, []string{storagev1.Finalizer}, b.Finalizers, "the finalizer is held")
			// The Warning is recorded once the status write succeeded,
			// just after the condition is seen.
			require.Eventually(t, func() bool {
				return len(f.recorder.Find(corev1.EventTypeWarning, storagev1.ReasonStoreUnavailable)) > 0
			}, waitFor, 5*time.Millisecond, "a Warning says the store is unavailable")
			warnings := f.recorder.Find(corev1.EventTypeWarning, storagev1.ReasonStoreUnavailable)

			tt.fail(f, false)
			require.Eventually(t, func() bool { _, found := f.bucket(t, "logs"); return !found }, waitFor, 5*time.Millisecond,
				"the Bucket goes once the store is back")
			_, found = f.stored(t, "logs")
			assert.False(t, found, "the bucket is gone from the store")
			assert.Len(t, f.recorder.Find(corev1.EventTypeWarning, storagev1.ReasonStoreUnavailable), len(warnings),
				"one Warning per outage, not one per retry")
		})
	}
}

// A bucket the operator did not create for this Bucket is left alone: no
// write, one Warning and Ready=False, quiet periodic checks, and a deletion
// of the Bucket that leaves the bucket in the store.
func TestForeignBucketIsRefused(t *testing.T) {
	tests := []struct {
		name string
		seed func(t *testing.T, c *store.Client) // creates bucket "shared" in the store
	}{
		{name: "created outside the operator", seed: func(t *testing.T, c *store.Client) {
			_, err := c.Put(context.Background(), "shared", store.Spec{Region: "us-east-1", Versioning: true})
			require.NoError(t, err)
		}},
		// Such as one whose finalizer was removed by hand before its
		// bucket was deleted.
		{name: "created for an earlier Bucket of the name", seed: func(t *testing.T, c *store.Client) {
			_, err := c.PutAs(context.Background(), "uid-of-an-earlier-bucket", "shared", store.Spec{Region: "eu-west-1"})
			require.NoError(t, err)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := start(t, 20*time.Millisecond) // periodic checks come again and again
			tt.seed(t, f.store)
			before, found := f.stored(t, "shared")
			require.True(t, found)

			f.create(t, "shared", "eu-west-1")
			require.Eventually(t, func() bool {
				c := f.ready(t, "shared")
				return c != nil && c.Status == metav1.ConditionFalse && c.Reason == storagev1.ReasonBucketExists
			}, waitFor, 5*time.Millisecond, "Ready=False says the bucket exists")
			assert.Contains(t, f.ready(t, "shared").Message, "shared")

			// Periodic checks (and the notification of the seeded bucket)
			// run the Bucket again: the refusal was an error once, and is
			// not one, or a Warning, at each check.
			require.Eventually(t, func() bool { return f.outcomes.errors.Load() >= 1 }, waitFor, 5*time.Millisecond, "the refusal is an error once")
			at := f.outcomes.total.Load()
			require.Eventually(t, func() bool { return f.outcomes.total.Load() >= at+5 }, waitFor, 5*time.Millisecond, "periodic checks")
			assert.Equal(t, int64(1), f.outcomes.errors.Load(), "errors: the refusal, once")
			warnings := f.recorder.Find(corev1.EventTypeWarning, storagev1.ReasonBucketExists)
			if assert.Len(t, warnings, 1, "one Warning") {
				assert.Contains(t, warnings[0].Message, "shared")
			}
			assert.Len(t, f.recorder.Find(corev1.EventTypeWarning, ""), 1, "no other Warning")
			after, found := f.stored(t, "shared")
			require.True(t, found)
			assert.Equal(t, before, after, "the bucket is untouched")

			// Deleted: the finalizer goes, the bucket stays.
			require.NoError(t, f.client.StorageV1().Buckets().Delete(context.Background(), "shared", metav1.DeleteOptions{}))
			require.Eventually(t, func() bool { _, found := f.bucket(t, "shared"); return !found }, waitFor, 5*time.Millisecond, "the Bucket goes")
			after, found = f.stored(t, "shared")
			require.True(t, found, "the bucket stays in the store")
			assert.Equal(t, before, after, "the bucket is untouched")
		})
	}
}

// A refused Bucket gets its own bucket once the foreign one goes.
func TestForeignBucketGoes(t *testing.T) {
	f := start(t, time.Hour)
	_, err := f.store.Put(context.Background(), "shared", store.Spec{Region: "us-east-1"})
	require.NoError(t, err)
	f.create(t, "shared", "eu-west-1")
	require.Eventually(t, func() bool {
		c := f.ready(t, "shared")
		return c != nil && c.Reason == storagev1.ReasonBucketExists
	}, waitFor, 5*time.Millisecond, "refused")

	require.NoError(t, f.store.Delete(context.Background(), "shared"))
	f.waitInStore(t, "shared", store.Spec{Region: "eu-west-1"}, "the Bucket's own bucket")
	own, _ := f.stored(t, "shared")
	b, _ := f.bucket(t, "shared")
	assert.Equal(t, string(b.UID), own.Owner, "owned by the Bucket")
	require.Eventually(t, func() bool {
		c := f.ready(t, "shared")
		return c != nil && c.Status == metav1.ConditionTrue
	}, waitFor, 5*time.Millisecond, "Ready")
	assert.Len(t, f.recorder.Find(corev1.EventTypeWarning, ""), 1, "the one Warning of the refusal")

	require.NoError(t, f.client.StorageV1().Buckets().Delete(context.Background(), "shared", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { _, found := f.bucket(t, "shared"); return !found }, waitFor, 5*time.Millisecond, "the Bucket goes")
	_, found := f.stored(t, "shared")
	assert.False(t, found, "its own bucket goes with it")
}

func TestPeriodicCheckRestores(t *testing.T) {
	f := start(t, 50*time.Millisecond)
	f.deaf.Store(true) // no notifications: only the periodic check wakes the controller
	f.create(t, "assets", "ap-south-1")
	f.waitInStore(t, "assets", store.Spec{Region: "ap-south-1"}, "created in the store")
	require.NoError(t, f.store.Delete(context.Background(), "assets"))
	f.waitInStore(t, "assets", store.Spec{Region: "ap-south-1"}, "restored")
}
