package shard

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestFilter checks what a sharded informer's watch passes on: the events
// of wanted keys and unplaced objects, deletions of the held copy (at the
// event's version) for held objects whose key is not wanted, nothing else
// of unwanted keys, and every bookmark.
func TestFilter(t *testing.T) {
	m, err := New(Config{Client: fake.NewClientset(), Namespace: "ops", Group: "g", Identity: "a"})
	require.NoError(t, err)
	members := []string{m.Name(), "other"}
	m.view.Store(newView(nil, m.Name(), members, members, nil, nil, time.Hour))
	var mine string
	var theirs []string
	for i := 0; mine == "" || len(theirs) < 2; i++ {
		name := "s-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if Assign(members, "app/"+name) == m.Name() {
			mine = name
		} else {
			theirs = append(theirs, name)
		}
	}
	held := theirs[1]
	secret := func(name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name}}
	}
	atVersion := func(s *corev1.Secret, rv string) *corev1.Secret {
		s.ResourceVersion = rv
		return s
	}
	heldCopy := secret(held)
	heldCopy.ResourceVersion, heldCopy.Labels = "1", map[string]string{"as": "held"}
	record := map[string]passed{"app/" + held: {obj: heldCopy, seq: 1}}
	c := &shardedCache{m: m, route: ByName, item: reflect.TypeFor[corev1.Secret](), record: record}
	unplaced := &shardedCache{m: m, route: ByController(schema.GroupKind{Kind: "ConfigMap"}), record: record}

	tests := []struct {
		name   string
		c      *shardedCache
		event  watch.Event
		passed bool
		as     watch.EventType
		asHeld bool // the held copy, not the event's object
	}{
		{"wanted add", c, watch.Event{Type: watch.Added, Object: secret(mine)}, true, watch.Added, false},
		{"wanted delete", c, watch.Event{Type: watch.Deleted, Object: secret(mine)}, true, watch.Deleted, false},
		{"unwanted add", c, watch.Event{Type: watch.Added, Object: secret(theirs[0])}, false, "", false},
		{"unwanted update", c, watch.Event{Type: watch.Modified, Object: secret(theirs[0])}, false, "", false},
		{"unwanted delete", c, watch.Event{Type: watch.Deleted, Object: secret(theirs[0])}, false, "", false},
		{"unwanted update of a held object", c, watch.Event{Type: watch.Modified, Object: atVersion(secret(held), "7")}, true, watch.Deleted, true},
		{"unwanted deletion of a held object", c, watch.Event{Type: watch.Deleted, Object: atVersion(secret(held), "7")}, true, watch.Deleted, true},
		{"bookmark", c, watch.Event{Type: watch.Bookmark, Object: secret(theirs[0])}, true, watch.Bookmark, false},
		{"unplaced object", unplaced, watch.Event{Type: watch.Modified, Object: secret(theirs[0])}, true, watch.Modified, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.c.filter(tt.event)
			assert.Equal(t, tt.passed, ok)
			if !ok {
				return
			}
			assert.Equal(t, tt.as, got.Type)
			if !tt.asHeld {
				assert.Same(t, tt.event.Object, got.Object)
				return
			}
			o := got.Object.(*corev1.Secret)
			assert.Equal(t, map[string]string{"as": "held"}, o.Labels)
			assert.Equal(t, "7", o.ResourceVersion)
			assert.Equal(t, "1", heldCopy.ResourceVersion, "the held copy is not changed")
		})
	}
}

// requireRelistAsked fails the test unless the next watch of c ends at
// once, for another relist.
func requireRelistAsked(t *testing.T, c *shardedCache) {
	t.Helper()
	w, err := c.WatchWithContext(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	e, ok := <-w.ResultChan()
	require.True(t, ok)
	assert.Equal(t, watch.Error, e.Type, "the watch ends for another relist")
}

// TestRelistCountsForRefreshesAskedBefore: a relist counts for the
// refreshes asked for before it began, not for one asked for while its
// request ran (the server may have answered before the change that asked
// for it): the watch after it ends at once, for another relist.
func TestRelistCountsForRefreshesAskedBefore(t *testing.T) {
	m, err := New(Config{Client: fake.NewClientset(), Namespace: "ops", Group: "g", Identity: "a"})
	require.NoError(t, err)
	var c *shardedCache
	list := func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		c.refresh(2) // asked for while the request runs
		return &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}}, nil
	}
	c = newShardedCache(m, ByName, reflect.TypeFor[corev1.Secret](), list, nil)
	c.indexer = cache.NewIndexer(cache.MetaNamespaceKeyFunc, c.indexers())
	c.refresh(1)
	_, err = c.ListWithContext(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	requireRelistAsked(t, c)
}

// referencingCache returns a cache of Secrets kept while a ConfigMap in
// primaries refers to them (annotation "secret"), listing with list, and
// the primaries' cache whose relists it waits for.
func referencingCache(t *testing.T, list func(context.Context, metav1.ListOptions) (runtime.Object, error)) (c, primary *shardedCache, primaries cache.Indexer) {
	m, err := New(Config{Client: fake.NewClientset(), Namespace: "ops", Group: "g", Identity: "a"})
	require.NoError(t, err)
	m.view.Store(newView(nil, m.Name(), []string{m.Name()}, []string{m.Name()}, nil, nil, time.Hour))
	refs := func(obj any) ([]string, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Annotations["secret"] != "" {
			return []string{cm.Namespace + "/" + cm.Annotations["secret"]}, nil
		}
		return nil, nil
	}
	primaries = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{"secret": refs})
	primary = newShardedCache(m, ByName, reflect.TypeFor[corev1.ConfigMap](), nil, nil)
	c = newShardedCache(m, nil, reflect.TypeFor[corev1.Secret](), list, nil)
	c.refs = &references{indexer: primaries, index: "secret", values: refs, after: primary}
	c.indexer = cache.NewIndexer(cache.MetaNamespaceKeyFunc, c.indexers())
	return c, primary, primaries
}

// TestReferencedRelistWaitsForPrimaries: a cache of referenced objects
// lists for an epoch only once the primaries' store holds their relist of
// that epoch, as what a gained key refers to is read from its primary.
func TestReferencedRelistWaitsForPrimaries(t *testing.T) {
	listed := 0
	c, primary, _ := referencingCache(t, func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		listed++
		return &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}}, nil
	})
	c.refresh(1)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.ListWithContext(gone, metav1.ListOptions{})
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, listed, "no list before the primaries' store holds theirs")
	primary.mu.Lock()
	primary.reported = 1
	primary.mu.Unlock()
	_, err = c.ListWithContext(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, listed)
}

// TestReferenceGainedDuringAListAsksForAnother: a primary that comes to
// refer to an object the cache does not hold while a relist runs (no
// watch to end) asks for another relist, which the watch after it starts:
// the running one may have filtered the object out before the primary's
// store changed.
func TestReferenceGainedDuringAListAsksForAnother(t *testing.T) {
	var c *shardedCache
	var primaries cache.Indexer
	lists := 0
	c, _, primaries = referencingCache(t, func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		if lists++; lists == 1 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "cm", Annotations: map[string]string{"secret": "s"}}}
			require.NoError(t, primaries.Add(cm))
			c.referenced(nil, cm) // the handler, told while the request runs
		}
		return &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}}, nil
	})
	_, err := c.ListWithContext(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	requireRelistAsked(t, c)

	_, err = c.ListWithContext(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Nil(t, c.stop)
	stop := c.beginWatch()
	assert.NotNil(t, stop, "a relist after the reference asks for nothing more")
}
