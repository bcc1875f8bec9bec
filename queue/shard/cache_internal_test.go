package shard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestFilter checks what a sharded informer's watch passes on: the events
// of wanted keys and unplaced objects, deletions for held objects whose
// key is not wanted, nothing else of unwanted keys, and every bookmark.
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
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, indexer.Add(secret(held)))
	c := &shardedCache{m: m, route: ByName, indexer: indexer}
	unplaced := &shardedCache{m: m, route: ByController(schema.GroupKind{Kind: "ConfigMap"}), indexer: indexer}

	tests := []struct {
		name   string
		c      *shardedCache
		event  watch.Event
		passed bool
		as     watch.EventType
	}{
		{"wanted add", c, watch.Event{Type: watch.Added, Object: secret(mine)}, true, watch.Added},
		{"wanted delete", c, watch.Event{Type: watch.Deleted, Object: secret(mine)}, true, watch.Deleted},
		{"unwanted add", c, watch.Event{Type: watch.Added, Object: secret(theirs[0])}, false, ""},
		{"unwanted update", c, watch.Event{Type: watch.Modified, Object: secret(theirs[0])}, false, ""},
		{"unwanted update of a held object", c, watch.Event{Type: watch.Modified, Object: secret(held)}, true, watch.Deleted},
		{"bookmark", c, watch.Event{Type: watch.Bookmark, Object: secret(theirs[0])}, true, watch.Bookmark},
		{"unplaced object", unplaced, watch.Event{Type: watch.Modified, Object: secret(theirs[0])}, true, watch.Modified},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.c.filter(tt.event)
			assert.Equal(t, tt.passed, ok)
			if ok {
				assert.Equal(t, tt.as, got.Type)
				assert.Same(t, tt.event.Object, got.Object)
			}
		})
	}
}

func TestStoreReached(t *testing.T) {
	tests := []struct {
		name           string
		store, version string
		synced, want   bool
	}{
		{"not synced", "200", "100", false, false},
		{"store behind", "99", "100", true, false},
		{"store at the list", "100", "100", true, true},
		{"store past the list", "1000", "100", true, true},
		{"list without a version", "5", "", true, true},
		{"store without a version", "", "100", true, true},
		{"unordered versions, equal", "x", "x", true, true},
		{"unordered versions, different", "x", "y", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, storeReached(tt.store, tt.version, tt.synced))
		})
	}
}
