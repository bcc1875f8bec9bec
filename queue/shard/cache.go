package shard

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Route names the key an object belongs to, in the string form the
// controller's Keys use; ok is false for an object that belongs to no key,
// which every replica keeps.
type Route func(obj metav1.Object) (key string, ok bool)

// ByName routes an object to its own key, "namespace/name" ("name" if it
// is cluster-scoped), as ObjectNames names keys: the Route of a
// controller's primary objects.
func ByName(obj metav1.Object) (string, bool) {
	return cache.ObjectName{Namespace: obj.GetNamespace(), Name: obj.GetName()}.String(), true
}

// ByController returns the Route of the objects a controller owns: an
// object goes to the key of its controller (the owner reference marked
// controller) if that controller has group and kind gk, named in the
// object's namespace; an object without such a controller belongs to no
// key. For a cluster-scoped owner of namespaced objects use
// ByClusterScopedController.
func ByController(gk schema.GroupKind) Route {
	return byController(gk, true)
}

// ByClusterScopedController is ByController for a cluster-scoped owner:
// the key is the controller's name alone.
func ByClusterScopedController(gk schema.GroupKind) Route {
	return byController(gk, false)
}

func byController(gk schema.GroupKind, sameNamespace bool) Route {
	return func(obj metav1.Object) (string, bool) {
		ref := metav1.GetControllerOfNoCopy(obj)
		if ref == nil || ref.Kind != gk.Kind {
			return "", false
		}
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != gk.Group {
			return "", false
		}
		name := cache.ObjectName{Name: ref.Name}
		if sameNamespace {
			name.Namespace = obj.GetNamespace()
		}
		return name.String(), true
	}
}

// Informer makes the informer of T's objects shared by informerFor's
// factory (pass a generated factory's InformerFor method) cache only what
// m's replica needs, and registers it there, so that the factory's
// typed informer and lister of T are this one. list and watch are the
// List and Watch methods of T's typed client (all namespaces, or the
// factory's namespace); route says which key each object belongs to.
//
// The informer holds the objects of the keys this replica works towards
// owning (see "What each replica caches" in the package documentation)
// and those route places under no key; a key it gains is owned only once
// the informer has relisted. Use it only for controllers restricted by
// a Gate of m. The factory's transform and resync period apply; its
// tweakListOptions do not. With a nil m Informer does nothing, so that
// an operator can call it whether or not it runs sharded.
//
// Informer must be called before anything asks the factory for T's
// informer; it returns an error if the factory already has one.
func Informer[T runtime.Object, L runtime.Object, F ~func(C, time.Duration) cache.SharedIndexInformer, C any](
	m *Membership, informerFor func(runtime.Object, F) cache.SharedIndexInformer,
	list func(context.Context, metav1.ListOptions) (L, error), watch func(context.Context, metav1.ListOptions) (watch.Interface, error),
	route Route) error {
	if m == nil {
		return nil
	}
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct || list == nil || watch == nil || route == nil {
		return fmt.Errorf("shard: Informer of %v needs a pointer to a struct type, list and watch functions and a route", typ)
	}
	example := reflect.New(typ.Elem()).Interface().(runtime.Object)
	var made *shardedCache
	informerFor(example, F(func(_ C, resync time.Duration) cache.SharedIndexInformer {
		made = &shardedCache{m: m, route: route, kind: typ.Elem().Name(), item: typ.Elem(),
			list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return list(ctx, o) }, watch: watch}
		inf := cache.NewSharedIndexInformerWithOptions(made, example, cache.SharedIndexInformerOptions{
			ResyncPeriod: resync, Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
		made.indexer, made.synced = inf.GetIndexer(), inf.HasSynced
		m.registerCache(made)
		return inf
	}))
	if made == nil {
		return fmt.Errorf("shard: the factory already has an informer of %v: call Informer before asking the factory for it", typ)
	}
	return nil
}

// listPage is how many objects a relist asks for per request.
const listPage = 500

// freshnessPoll is how often a watch checks whether the relist before it
// has reached the informer's store.
const freshnessPoll = 20 * time.Millisecond

// shardedCache is the cache.ListerWatcher of a sharded informer: it drops
// the objects of keys the replica does not want and relists when asked.
type shardedCache struct {
	m       *Membership
	route   Route
	kind    string
	item    reflect.Type
	list    func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch   func(context.Context, metav1.ListOptions) (watch.Interface, error)
	indexer cache.Indexer
	synced  func() bool

	mu sync.Mutex
	// requested is the latest epoch a relist was asked for, listed the
	// epoch of the latest relist, which is held once the store reached
	// listedVersion (reported is the latest epoch reported held).
	requested, listed, reported uint64
	listedVersion               string
	// stop ends the current watch with an expiry, which makes the
	// reflector relist; nil while no watch runs.
	stop chan struct{}
}

var (
	_ cache.ListerWatcherWithContext = (*shardedCache)(nil)
	_ shardCache                     = (*shardedCache)(nil)
)

// IsWatchListSemanticsUnSupported makes the reflector list and watch
// rather than stream its lists: the relists must be consistent reads.
func (c *shardedCache) IsWatchListSemanticsUnSupported() bool { return true }

// refresh asks for a relist begun after this call.
func (c *shardedCache) refresh(epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requested = max(c.requested, epoch)
	if c.stop != nil {
		close(c.stop)
		c.stop = nil
	}
}

// keep drops from the store the objects of keys v does not want. Events
// of such objects already on their way may bring some back; the next
// change of view drops them again, and they are never owned.
func (c *shardedCache) keep(v *view) {
	for _, obj := range c.indexer.List() {
		if o, ok := obj.(metav1.Object); ok && !c.wanted(v, o) {
			_ = c.indexer.Delete(obj) // the store's Delete fails only for objects without a key
		}
	}
}

// wanted reports whether the replica keeps obj under v.
func (c *shardedCache) wanted(v *view, obj metav1.Object) bool {
	key, ok := c.route(obj)
	return !ok || v.wants(hashKey(key))
}

// List implements cache.ListerWatcher with a consistent, paginated list
// (whatever resourceVersion the reflector asks for) of the wanted objects.
func (c *shardedCache) List(opts metav1.ListOptions) (runtime.Object, error) {
	return c.ListWithContext(context.Background(), opts)
}

// ListWithContext implements cache.ListerWatcherWithContext.
func (c *shardedCache) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	c.mu.Lock()
	epoch := c.requested
	c.mu.Unlock()
	page := metav1.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector, Limit: listPage}
	var first runtime.Object
	var kept []runtime.Object
	for {
		got, err := c.list(ctx, page)
		if err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(got)
		if err != nil {
			return nil, fmt.Errorf("shard: list of %s: %w", c.kind, err)
		}
		v := c.m.view.Load()
		for _, item := range items {
			if o, ok := item.(metav1.Object); ok && c.wanted(v, o) {
				kept = append(kept, c.copyOf(item))
			}
		}
		lm, err := meta.ListAccessor(got)
		if err != nil {
			return nil, fmt.Errorf("shard: list of %s: %w", c.kind, err)
		}
		if first == nil {
			first = got
		}
		if page.Continue = lm.GetContinue(); page.Continue == "" {
			break
		}
	}
	if err := meta.SetList(first, kept); err != nil {
		return nil, fmt.Errorf("shard: list of %s: %w", c.kind, err)
	}
	lm, _ := meta.ListAccessor(first)
	lm.SetContinue("")
	lm.SetRemainingItemCount(nil)
	c.mu.Lock()
	c.listed, c.listedVersion = max(c.listed, epoch), lm.GetResourceVersion()
	c.mu.Unlock()
	return first, nil
}

// copyOf returns a shallow copy of a list item, so that the page it
// came from can be freed.
func (c *shardedCache) copyOf(item runtime.Object) runtime.Object {
	v := reflect.ValueOf(item)
	if v.Kind() != reflect.Pointer || v.Elem().Type() != c.item {
		return item
	}
	cp := reflect.New(c.item)
	cp.Elem().Set(v.Elem())
	return cp.Interface().(runtime.Object)
}

// Watch implements cache.ListerWatcher.
func (c *shardedCache) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return c.WatchWithContext(context.Background(), opts)
}

// WatchWithContext implements cache.ListerWatcherWithContext: the events
// of the wanted objects, those of objects the store holds that are no
// longer wanted as deletions, and an expiry when a relist is asked for.
func (c *shardedCache) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	c.mu.Lock()
	if c.requested > c.listed {
		c.mu.Unlock()
		return expired(), nil
	}
	stop := make(chan struct{})
	c.stop = stop
	c.mu.Unlock()
	inner, err := c.watch(ctx, opts)
	if err != nil {
		c.mu.Lock()
		if c.stop == stop {
			c.stop = nil
		}
		c.mu.Unlock()
		return nil, err
	}
	w := &filteredWatch{out: make(chan watch.Event), done: make(chan struct{})}
	go c.pump(inner, w, stop)
	return w, nil
}

// pump passes inner's events through the filter to w until either stops,
// or stop closes, which ends w with an expiry.
func (c *shardedCache) pump(inner watch.Interface, w *filteredWatch, stop chan struct{}) {
	defer close(w.out)
	defer inner.Stop()
	defer func() {
		c.mu.Lock()
		if c.stop == stop {
			c.stop = nil
		}
		c.mu.Unlock()
	}()
	send := func(e watch.Event) bool {
		select {
		case w.out <- e:
			return true
		case <-w.done:
			return false
		}
	}
	for {
		// Poll the store only while a relist is not yet known to be held.
		var poll <-chan time.Time
		if !c.checkFresh() {
			poll = time.After(freshnessPoll)
		}
		select {
		case <-w.done:
			return
		case <-stop:
			send(expiredEvent())
			return
		case <-poll:
		case e, ok := <-inner.ResultChan():
			if !ok {
				return
			}
			if e, ok = c.filter(e); ok && !send(e) {
				return
			}
		}
	}
}

// filter decides what the reflector sees of an event.
func (c *shardedCache) filter(e watch.Event) (watch.Event, bool) {
	if e.Type != watch.Added && e.Type != watch.Modified && e.Type != watch.Deleted {
		return e, true // bookmarks and errors
	}
	obj, ok := e.Object.(metav1.Object)
	if !ok || c.wanted(c.m.view.Load(), obj) {
		return e, true
	}
	if _, held, _ := c.indexer.Get(e.Object); held {
		return watch.Event{Type: watch.Deleted, Object: e.Object}, true
	}
	return e, false
}

// checkFresh reports the latest relist to the membership once the store
// holds it, and whether it has.
func (c *shardedCache) checkFresh() bool {
	c.mu.Lock()
	epoch, version := c.listed, c.listedVersion
	if epoch <= c.reported {
		c.mu.Unlock()
		return true
	}
	c.mu.Unlock()
	if !storeReached(c.indexer.LastStoreSyncResourceVersion(), version, c.synced()) {
		return false
	}
	c.mu.Lock()
	c.reported = max(c.reported, epoch)
	c.mu.Unlock()
	c.m.refreshed(c, epoch)
	return true
}

// storeReached reports whether a store that last synced at store holds a
// list at version; synced says whether the informer has synced. A list
// without a version (as fake clients give), or a
// store that keeps none (client-go's AtomicFIFO feature off), counts as
// held once the watch after the list runs; versions that cannot be
// ordered count once they are equal.
func storeReached(store, version string, synced bool) bool {
	switch {
	case !synced:
		return false // the first list is not in the store yet
	case version == "" || store == "":
		return true
	}
	cmp, err := resourceversion.CompareResourceVersion(store, version)
	if err != nil {
		return store == version
	}
	return cmp >= 0
}

// filteredWatch is the watch.Interface a sharded cache gives the reflector.
type filteredWatch struct {
	out      chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

func (w *filteredWatch) Stop()                          { w.stopOnce.Do(func() { close(w.done) }) }
func (w *filteredWatch) ResultChan() <-chan watch.Event { return w.out }

func expiredEvent() watch.Event {
	return watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone,
		Reason: metav1.StatusReasonExpired, Message: "shard: relisting for the keys this replica gained"}}
}

// expired returns a watch that ends at once with an expiry.
func expired() watch.Interface {
	w := &filteredWatch{out: make(chan watch.Event, 1), done: make(chan struct{})}
	w.out <- expiredEvent()
	close(w.out)
	return w
}
