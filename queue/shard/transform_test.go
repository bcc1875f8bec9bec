package shard

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// transformCapture is an informer that keeps the transform set on it, so
// that a test can run it as the reflector would.
type transformCapture struct {
	cache.SharedIndexInformer
	transform cache.TransformFunc
}

func (i *transformCapture) SetTransform(t cache.TransformFunc) error {
	i.transform = t
	return nil
}

// keyLabel names the label by which labelRoute routes an object.
const keyLabel = "shard.test/key"

func labelRoute(obj metav1.Object) (string, bool) {
	key, ok := obj.GetLabels()[keyLabel]
	return key, ok
}

// blockingTransform is a transform that changes its input in place, as
// client-go allows: it rebuilds the labels (they are absent or empty
// meanwhile) and strips the managed fields, and stops halfway until
// released.
type blockingTransform struct {
	halfway, release chan struct{}
}

func newBlockingTransform() *blockingTransform {
	return &blockingTransform{halfway: make(chan struct{}), release: make(chan struct{})}
}

func (b *blockingTransform) transform(obj any) (any, error) {
	s := obj.(*corev1.Secret)
	labels := s.Labels
	s.Labels = nil
	close(b.halfway)
	// Not ordered with what the test does meanwhile: the race detector
	// reports a read of these fields.
	s.Labels = make(map[string]string, len(labels))
	s.ManagedFields = nil
	<-b.release
	for k, v := range labels {
		s.Labels[k] = v
	}
	return s, nil
}

// TestCacheNeverReadsObjectsBeingTransformed: while the informer's
// transform is changing an object the cache passed (in place, stopped
// halfway), the object moves to a key of another replica, or the view
// stops wanting its key. The cache must not read the object meanwhile:
// the deletion it passes is of the object as it was passed, and the
// drop routes it as it was passed (run with -race, the reads of the
// former rule are also reported as data races).
func TestCacheNeverReadsObjectsBeingTransformed(t *testing.T) {
	tests := []struct {
		name string
		// during runs while the transform of the passed object is
		// stopped halfway; after, once the store took the object.
		during func(t *testing.T, c *shardedCache, mine, theirs string)
		after  func(t *testing.T, c *shardedCache)
	}{
		{
			name: "an event moves the object away",
			during: func(t *testing.T, c *shardedCache, mine, theirs string) {
				moved := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "s", ResourceVersion: "2",
					Labels: map[string]string{keyLabel: theirs}}}
				var got []watch.Event
				require.True(t, c.pass(watch.Event{Type: watch.Modified, Object: moved},
					func(e watch.Event) bool { got = append(got, e); return true }))
				require.Len(t, got, 1)
				assert.Equal(t, watch.Deleted, got[0].Type)
				gone := got[0].Object.(*corev1.Secret)
				assert.Equal(t, "2", gone.ResourceVersion, "the deletion is at the version that moved the object")
				assert.Equal(t, map[string]string{keyLabel: mine, "other": "label"}, gone.Labels,
					"the deletion is of the object as it was passed, not as its transform left it halfway")
			},
		},
		{
			name: "the view stops wanting the object's key",
			during: func(t *testing.T, c *shardedCache, _, _ string) {
				// Every key is the other replica's now.
				c.m.view.Store(newView(nil, c.m.Name(), []string{"other"}, []string{"other"}, nil, nil, time.Hour))
				c.keep(c.m.view.Load())
			},
			after: func(t *testing.T, c *shardedCache) {
				c.maintain()
				_, held, err := c.indexer.GetByKey("app/s")
				require.NoError(t, err)
				assert.False(t, held, "the object of a key no longer wanted is dropped once the store took it")
			},
		},
	}
	// How the object reached the reflector: a watch event, or a list,
	// whose items the reflector transforms after List returned.
	sources := []struct {
		name string
		pass func(t *testing.T, c *shardedCache, obj *corev1.Secret) runtime.Object
	}{
		{"watch event", func(t *testing.T, c *shardedCache, obj *corev1.Secret) runtime.Object {
			var sent []watch.Event
			require.True(t, c.pass(watch.Event{Type: watch.Added, Object: obj},
				func(e watch.Event) bool { sent = append(sent, e); return true }))
			require.Len(t, sent, 1)
			return sent[0].Object
		}},
		{"list", func(t *testing.T, c *shardedCache, obj *corev1.Secret) runtime.Object {
			c.list = func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				return &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []corev1.Secret{*obj}}, nil
			}
			got, err := c.ListWithContext(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			items, err := meta.ExtractList(got)
			require.NoError(t, err)
			require.Len(t, items, 1)
			return items[0]
		}},
	}
	for _, tt := range tests {
		for _, source := range sources {
			t.Run(tt.name+" after a "+source.name, func(t *testing.T) {
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
				b := newBlockingTransform()
				require.NoError(t, inf.SetTransform(b.transform))

				passed := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "s", ResourceVersion: "1",
					Labels:        map[string]string{keyLabel: mine, "other": "label"},
					ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
				reflected := source.pass(t, c, passed)

				// The reflector's goroutine: transform, then the store takes
				// the transformed object.
				done := make(chan error, 1)
				go func() {
					out, err := capture.transform(reflected)
					if err == nil {
						err = c.indexer.Add(out)
					}
					done <- err
				}()
				<-b.halfway
				tt.during(t, c, mine, theirs)
				close(b.release)
				require.NoError(t, <-done)
				if tt.after != nil {
					tt.after(t, c)
				}
			})
		}
	}
}

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
