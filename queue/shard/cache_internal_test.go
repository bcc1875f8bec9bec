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
	w, err := c.WatchWithContext(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	e, ok := <-w.ResultChan()
	require.True(t, ok)
	assert.Equal(t, watch.Error, e.Type, "the watch ends for another relist")
}
