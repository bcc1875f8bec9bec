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
	storagev1alpha1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/bucket/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/examples/bucket/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/examples/bucket/store"
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
	down   atomic.Bool
	// deaf answers the change notifications' long polls with 503.
	deaf     atomic.Bool
	recorder *eventstest.Recorder
}

func start(t *testing.T, resync time.Duration) *fixture {
	t.Helper()
	srv, err := store.NewServer(filepath.Join(t.TempDir(), "buckets.json"))
	require.NoError(t, err)
	f := &fixture{client: fake.NewSimpleClientset(), recorder: eventstest.NewRecorder()}
	httpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() || f.deaf.Load() && r.URL.Path == "/changes" {
			http.Error(w, `{"error":"down for maintenance"}`, http.StatusServiceUnavailable)
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
	ctrl, err := newController(ctx, f.store, f.client, factory.Storage().V1alpha1().Buckets(), f.recorder, resync)
	require.NoError(t, err)
	queuetest.Start(t, ctrl, operator.WithInformers(factory))
	return f
}

func (f *fixture) create(t *testing.T, name, region string) {
	t.Helper()
	_, err := f.client.StorageV1alpha1().Buckets().Create(context.Background(), &storagev1alpha1.Bucket{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1alpha1.BucketSpec{Region: region}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func (f *fixture) bucket(t *testing.T, name string) (*storagev1alpha1.Bucket, bool) {
	t.Helper()
	b, err := f.client.StorageV1alpha1().Buckets().Get(context.Background(), name, metav1.GetOptions{})
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
	return meta.FindStatusCondition(b.Status.Conditions, storagev1alpha1.ConditionReady)
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
	assert.Equal(t, []string{storagev1alpha1.Finalizer}, b.Finalizers)
	assert.Equal(t, b.Generation, b.Status.ObservedGeneration)

	// The spec changes: the store follows.
	b.Spec.Versioning = true
	_, err := f.client.StorageV1alpha1().Buckets().Update(context.Background(), b, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.waitInStore(t, "photos", store.Spec{Region: "eu-west-1", Versioning: true}, "the spec change reaches the store")

	// Changed and removed behind the operator's back: restored.
	_, err = f.store.Put(context.Background(), "photos", store.Spec{Region: "us-east-1"})
	require.NoError(t, err)
	f.waitInStore(t, "photos", store.Spec{Region: "eu-west-1", Versioning: true}, "a changed bucket is restored")
	require.NoError(t, f.store.Delete(context.Background(), "photos"))
	f.waitInStore(t, "photos", store.Spec{Region: "eu-west-1", Versioning: true}, "a removed bucket is restored")

	// Deleted: the bucket goes from the store, then the Bucket.
	require.NoError(t, f.client.StorageV1alpha1().Buckets().Delete(context.Background(), "photos", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { _, found := f.bucket(t, "photos"); return !found }, waitFor, 5*time.Millisecond, "the Bucket goes")
	_, found := f.stored(t, "photos")
	assert.False(t, found, "the bucket is gone from the store")
	assert.Empty(t, f.recorder.Find(corev1.EventTypeWarning, ""), "no Warning when all goes well")
}

func TestDeletionWhileTheStoreIsDown(t *testing.T) {
	f := start(t, time.Hour)
	f.create(t, "logs", "eu-west-1")
	f.waitInStore(t, "logs", store.Spec{Region: "eu-west-1"}, "created in the store")
	require.Eventually(t, func() bool { b, _ := f.bucket(t, "logs"); return len(b.Finalizers) == 1 }, waitFor, 5*time.Millisecond)

	f.down.Store(true)
	require.NoError(t, f.client.StorageV1alpha1().Buckets().Delete(context.Background(), "logs", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		c := f.ready(t, "logs")
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == storagev1alpha1.ReasonStoreUnavailable
	}, waitFor, 5*time.Millisecond, "Ready=False says the store is unavailable")
	b, found := f.bucket(t, "logs")
	require.True(t, found, "the Bucket stays while the cleanup fails")
	assert.NotNil(t, b.DeletionTimestamp)
	assert.Equal(t, []string{storagev1alpha1.Finalizer}, b.Finalizers, "the finalizer is held")
	warnings := f.recorder.Find(corev1.EventTypeWarning, storagev1alpha1.ReasonStoreUnavailable)
	require.NotEmpty(t, warnings)

	f.down.Store(false)
	require.Eventually(t, func() bool { _, found := f.bucket(t, "logs"); return !found }, waitFor, 5*time.Millisecond,
		"the Bucket goes once the store is back")
	_, found = f.stored(t, "logs")
	assert.False(t, found, "the bucket is gone from the store")
	assert.Len(t, f.recorder.Find(corev1.EventTypeWarning, storagev1alpha1.ReasonStoreUnavailable), len(warnings),
		"one Warning per outage, not one per retry")
}

func TestPeriodicCheckRestores(t *testing.T) {
	f := start(t, 50*time.Millisecond)
	f.deaf.Store(true) // no notifications: only the periodic check wakes the controller
	f.create(t, "assets", "ap-south-1")
	f.waitInStore(t, "assets", store.Spec{Region: "ap-south-1"}, "created in the store")
	require.NoError(t, f.store.Delete(context.Background(), "assets"))
	f.waitInStore(t, "assets", store.Spec{Region: "ap-south-1"}, "restored")
}

func TestFlags(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{args: []string{"--store-url", "ftp://x"}, want: 2},
		{args: []string{"--store-url", "http://127.0.0.1:1", "--workers", "0"}, want: 2},
		{args: []string{"--resync", "0s"}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.args[0]+" "+tt.args[1], func(t *testing.T) {
			assert.Equal(t, tt.want, run(tt.args, new(discard)))
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
