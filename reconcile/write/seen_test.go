package write

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/reconcile"
)

func cm(uid types.UID, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: uid, ResourceVersion: rv}}
}

// deleting is cm marked for deletion.
func deleting(c *corev1.ConfigMap) *corev1.ConfigMap {
	c.DeletionTimestamp = &metav1.Time{}
	return c
}

func TestSeenIn(t *testing.T) {
	update := written{uid: "u1", version: "20", before: "10"}
	create := written{uid: "u1", version: "20"}
	deleted := written{uid: "u1", version: "20", deleted: true}
	opaque := written{uid: "u1", version: "b", before: "a"}
	tests := []struct {
		name   string
		w      written
		cached *corev1.ConfigMap // nil: not in the cache
		store  string
		want   bool
	}{
		{name: "update: cache at the write", w: update, cached: cm("u1", "20"), store: "20", want: true},
		{name: "update: cache past the write", w: update, cached: cm("u1", "25"), store: "25", want: true},
		{name: "update: cache before the write", w: update, cached: cm("u1", "10"), store: "15", want: false},
		{name: "update: store past the write, object since deleted", w: update, store: "30", want: true},
		{name: "update: store before the write, object missing", w: update, store: "15", want: false},
		{name: "update: store version unknown, object missing", w: update, store: "", want: true},
		{name: "update: store version unknown, cache before", w: update, cached: cm("u1", "10"), store: "", want: false},
		{name: "create: not in the cache yet", w: create, store: "15", want: false},
		{name: "create: old incarnation in the cache", w: create, cached: cm("u0", "5"), store: "15", want: false},
		{name: "create: old incarnation, store unknown", w: create, cached: cm("u0", "5"), store: "", want: true},
		{name: "create: another incarnation after it", w: create, cached: cm("u2", "30"), store: "30", want: true},
		{name: "delete: still cached as it was", w: deleted, cached: cm("u1", "20"), store: "40", want: false},
		{name: "delete: cached as being deleted", w: deleted, cached: deleting(cm("u1", "21")), store: "21", want: true},
		{name: "delete: cached as changed since, not being deleted", w: deleted, cached: cm("u1", "21"), store: "21", want: false},
		{name: "delete: cached being deleted at the version read", w: deleted, cached: deleting(cm("u1", "20")), store: "21", want: false},
		{name: "delete: gone", w: deleted, store: "15", want: true},
		{name: "delete: recreated", w: deleted, cached: cm("u2", "19"), store: "19", want: true},
		{name: "delete: opaque versions, unchanged", w: written{uid: "u1", version: "x", deleted: true}, cached: cm("u1", "x"), want: false},
		{name: "delete: opaque versions, changed", w: written{uid: "u1", version: "x", deleted: true}, cached: deleting(cm("u1", "y")), want: true},
		{name: "delete: opaque versions, changed, not being deleted", w: written{uid: "u1", version: "x", deleted: true}, cached: cm("u1", "y"), want: false},
		{name: "opaque: the replaced version", w: opaque, cached: cm("u1", "a"), store: "a", want: false},
		{name: "opaque: the written version", w: opaque, cached: cm("u1", "b"), store: "b", want: true},
		{name: "opaque: another version", w: opaque, cached: cm("u1", "c"), store: "c", want: true},
		{name: "opaque: missing", w: opaque, store: "c", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cached metav1.Object
			if tt.cached != nil {
				cached = tt.cached
			}
			assert.Equal(t, tt.want, tt.w.seenIn(cached, tt.cached != nil, tt.store))
		})
	}
}

// Writes of objects that are never read again are dropped once the cache
// has seen them, when the map has doubled.
func TestSweep(t *testing.T) {
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().ConfigMaps().TypedInformer()
	o := New(inf)
	for i := range 200 {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint(i), UID: types.UID(fmt.Sprint(i)), ResourceVersion: fmt.Sprint(100 + i)}}
		o.remember(cache.MetaObjectToName(obj), "", obj)
		require.NoError(t, inf.GetIndexer().Add(obj)) // the cache sees it at once
		o.mu.Lock()
		n := len(o.pending)
		o.mu.Unlock()
		require.Less(t, n, 2*minSweep, "after %d writes", i+1)
	}
}

// A burst of writes, all pending at once, leaves no map of its size behind
// once the cache has seen them and they are read: Go maps never shrink.
func TestPendingWritesReleaseTheStorageOfABurst(t *testing.T) {
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().ConfigMaps().TypedInformer()
	o := New(inf)
	const burst = 4 * shrinkAt
	var objs []*corev1.ConfigMap
	o.mu.Lock()
	o.sweepAt = 2 * burst // no sweep: all stay pending
	o.mu.Unlock()
	for i := range burst {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint(i), UID: types.UID(fmt.Sprint(i)), ResourceVersion: fmt.Sprint(100 + i)}}
		o.remember(cache.MetaObjectToName(obj), "", obj)
		objs = append(objs, obj)
	}
	o.mu.Lock()
	require.Len(t, o.pending, burst)
	require.Equal(t, burst, o.pendingPeak)
	o.mu.Unlock()
	// The cache sees all but the last few; those stay pending through
	// every move to a smaller map.
	const unseen = 5
	for _, obj := range objs[:burst-unseen] {
		require.NoError(t, inf.GetIndexer().Add(obj))
		_, found, err := o.Get(cache.MetaObjectToName(obj))
		require.NoError(t, err)
		require.True(t, found)
	}
	for _, obj := range objs[burst-unseen:] {
		_, _, err := o.Get(cache.MetaObjectToName(obj))
		require.ErrorIs(t, err, reconcile.ErrStaleCache, "a write the cache has not seen")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.Len(t, o.pending, unseen)
	assert.Less(t, o.pendingPeak, shrinkAt, "the map of the burst was replaced by one made for a fraction of it")
}

// indexerApplyingAfterRead is a cache whose informer applies an event just
// after each read of an object, as a running informer may.
type indexerApplyingAfterRead struct {
	cache.Indexer
	next []any // objects applied, one after each read
}

func (i *indexerApplyingAfterRead) GetByKey(key string) (any, bool, error) {
	item, found, err := i.Indexer.GetByKey(key)
	if len(i.next) > 0 {
		_ = i.Indexer.Update(i.next[0])
		i.next = i.next[1:]
	}
	return item, found, err
}

// A read of the cache that meets the controller's own write being applied
// between the object's read and the store's version: the object read is
// still the one before the write, so Get must not let it through, however
// new the store's version is by the time it is compared.
func TestGetDoesNotPassAnObjectReadBeforeTheWriteItWaitsFor(t *testing.T) {
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().ConfigMaps().TypedInformer()
	before, written := cm("u1", "10"), cm("u1", "20")
	require.NoError(t, inf.GetIndexer().Add(before))
	require.Equal(t, "10", inf.GetIndexer().LastStoreSyncResourceVersion(), "the store reports its version")
	o := New(inf)
	o.remember(cache.MetaObjectToName(before), "10", written)
	o.indexer = &indexerApplyingAfterRead{Indexer: inf.GetIndexer(), next: []any{written}}

	got, _, err := o.Get(cache.MetaObjectToName(before))
	require.Error(t, err, "Get returned resourceVersion %s", func() string {
		if got != nil {
			return got.ResourceVersion
		}
		return ""
	}())
	assert.ErrorIs(t, err, reconcile.ErrStaleCache)

	got, _, err = o.Get(cache.MetaObjectToName(before))
	require.NoError(t, err, "the cache has the write now")
	assert.Equal(t, "20", got.ResourceVersion)
}
