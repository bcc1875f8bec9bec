package shard

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// lastApplied is the annotation a common in-place transform strips.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// TestDeletionOfMovedObjectSharesNothingWithTheStore: with an in-place
// transform of the kind client-go allows (and operators commonly set: it
// deletes the last-applied annotation from the object's own map and strips
// the managed fields), an object that moves to another replica's key is
// passed to the reflector as a deletion. The informer runs its transform
// on that deletion too; the deletion must not share the maps of the object
// the store holds (the object passed before), or the transform writes the
// store's object while listers and handlers read it: a data race, and with
// Go's maps a possible "concurrent map read and map write" crash.
func TestDeletionOfMovedObjectSharesNothingWithTheStore(t *testing.T) {
	for _, during := range []bool{false, true} {
		name := "the object moves once the store took it"
		if during {
			name = "the object moves while its transform runs"
		}
		t.Run(name, func(t *testing.T) {
			m, err := New(Config{Client: fake.NewClientset(), Namespace: "ops", Group: "g", Identity: "a"})
			require.NoError(t, err)
			members := []string{m.Name(), "other"}
			m.view.Store(newView(nil, m.Name(), members, members, nil, nil, time.Hour))
			mine, theirs := "", ""
			for i := 0; mine == "" || theirs == ""; i++ {
				key := "app/k-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
				if Assign(members, key) == m.Name() {
					mine = key
				} else {
					theirs = key
				}
			}
			c := newShardedCache(m, labelRoute, reflect.TypeFor[corev1.Secret](), nil, nil)
			c.indexer = cache.NewIndexer(cache.MetaNamespaceKeyFunc, c.indexers())
			capture := &transformCapture{}
			inf := &shardedInformer{SharedIndexInformer: capture, c: c}
			halfway, release := make(chan struct{}), make(chan struct{})
			first := true
			require.NoError(t, inf.SetTransform(func(obj any) (any, error) {
				s := obj.(*corev1.Secret)
				delete(s.Annotations, lastApplied) // in place, as client-go allows
				s.ManagedFields = nil
				if first && during {
					first = false
					close(halfway)
					<-release
				}
				return s, nil
			}))

			x := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "s", ResourceVersion: "1",
				Labels:        map[string]string{keyLabel: mine},
				Annotations:   map[string]string{lastApplied: "{}", "keep": "v"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
			var sent []watch.Event
			send := func(e watch.Event) bool { sent = append(sent, e); return true }
			require.True(t, c.pass(watch.Event{Type: watch.Added, Object: x}, send))

			// The reflector: transform, then the store takes the object.
			stored := make(chan error, 1)
			go func() {
				out, err := capture.transform(sent[0].Object)
				if err == nil {
					err = c.indexer.Add(out)
				}
				stored <- err
			}()
			moved := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "s", ResourceVersion: "2",
				Labels:      map[string]string{keyLabel: theirs},
				Annotations: map[string]string{lastApplied: "{}", "keep": "v"}}}
			if during {
				<-halfway
				require.True(t, c.pass(watch.Event{Type: watch.Modified, Object: moved}, send))
				close(release)
				require.NoError(t, <-stored)
			} else {
				require.NoError(t, <-stored)
				require.True(t, c.pass(watch.Event{Type: watch.Modified, Object: moved}, send))
			}
			require.Len(t, sent, 2)
			require.Equal(t, watch.Deleted, sent[1].Type)
			deletion := sent[1].Object.(*corev1.Secret)

			// A lister (a reconcile) reads the stored object meanwhile.
			got, held, err := c.indexer.GetByKey("app/s")
			require.NoError(t, err)
			require.True(t, held)
			inStore := got.(*corev1.Secret)
			stop, reading := make(chan struct{}), make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				once := sync.Once{}
				for {
					obj, _, _ := c.indexer.GetByKey("app/s")
					if obj != nil {
						_ = obj.(*corev1.Secret).Annotations["keep"]
					}
					once.Do(func() { close(reading) })
					select {
					case <-stop:
						return
					default:
					}
				}
			}()
			<-reading

			shared := reflect.ValueOf(deletion.Annotations).UnsafePointer() == reflect.ValueOf(inStore.Annotations).UnsafePointer()
			// The reflector transforms the deletion, as it does every
			// event but a resync's.
			_, err = capture.transform(deletion)
			require.NoError(t, err)
			close(stop)
			wg.Wait()
			assert.False(t, shared, "the deletion passed to the informer's transform shares its annotations map with the object "+
				"the store holds: the in-place transform writes the store's object while listers read it")
		})
	}
}
