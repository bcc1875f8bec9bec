package shard

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
// owning (see "What each replica caches" in the package documentation),
// those of keys whose reconciles have not returned since the keys moved
// away, and those route places under no key; a key it gains is owned
// only once the informer's store holds its relist. Use it only for
// controllers restricted by a Gate of m. The factory's transform and
// resync period apply (the transform may change the objects it is given
// in place, maps and slices included: the cache reads none of them before
// its transform returned, and the deletion it gives the transform for an
// object that moved to another replica's key is a deep copy, sharing
// nothing with the object the store holds); its tweakListOptions do not. The informer's
// indexer has one more index, which indexes nothing: through it the
// informer sees its store take objects (and for the same reason it wraps
// the transforms set on it). With a nil m Informer does nothing, so that
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
	if route == nil {
		return fmt.Errorf("shard: Informer of %v needs a route", reflect.TypeFor[T]())
	}
	_, err := register[T](m, informerFor, list, watch, func(c *shardedCache) { c.route = route })
	return err
}

// Referenced makes the informer of T's objects shared by informerFor's
// factory (pass a generated factory's InformerFor method) cache only the
// objects that the primaries of m's replica refer to, and registers it
// there, as Informer does for owned objects. The primaries are the objects
// of referrers, the informer of the controller's primary kind (typically
// made sharded by Informer), whose index of that name files each primary
// under the keys ("namespace/name", or "name") of the objects it refers
// to: the index a handler uses to enqueue the referrers of a changed
// object. An object is kept while a primary in referrers' cache refers to
// it and that primary's key, its own name as ByName names it, is one this
// replica keeps; an object no primary refers to is kept by no replica.
//
// When keys move, the informer relists after referrers' informer holds
// its relist, so a key gained is owned only once this cache holds what
// the key's primary refers to. When a primary comes to refer to an object
// the cache does not hold (its spec changed, or it was created), the
// informer relists: one paginated list of T, shared by every reference
// added while it is pending. Until that relist reaches the store, a read
// of the newly referenced object misses as if it did not exist; its
// arrival is an add event, which the referrers' index maps back to the
// primary. A reference removed lets the object go at once if no other
// kept primary refers to it.
//
// Register the index on referrers before calling Referenced. With a nil
// m Referenced does nothing.
func Referenced[T runtime.Object, L runtime.Object, F ~func(C, time.Duration) cache.SharedIndexInformer, C any](
	m *Membership, informerFor func(runtime.Object, F) cache.SharedIndexInformer,
	list func(context.Context, metav1.ListOptions) (L, error), watch func(context.Context, metav1.ListOptions) (watch.Interface, error),
	referrers cache.SharedIndexInformer, index string) error {
	if m == nil {
		return nil
	}
	if referrers == nil {
		return fmt.Errorf("shard: Referenced of %v needs the referrers' informer", reflect.TypeFor[T]())
	}
	refs, ok := referrers.GetIndexer().GetIndexers()[index]
	if !ok {
		return fmt.Errorf("shard: Referenced of %v: the referrers' informer has no index %q: register it first", reflect.TypeFor[T](), index)
	}
	c, err := register[T](m, informerFor, list, watch, func(c *shardedCache) {
		c.refs = &references{indexer: referrers.GetIndexer(), index: index, values: refs}
		if primary, ok := referrers.(*shardedInformer); ok {
			c.refs.after = primary.c
		}
	})
	if err != nil {
		return err
	}
	_, err = referrers.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.referenced(nil, obj) },
		UpdateFunc: c.referenced,
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			c.referenced(obj, nil)
		},
	})
	if err != nil {
		return fmt.Errorf("shard: Referenced of %v: %w", reflect.TypeFor[T](), err)
	}
	return nil
}

// register makes and registers the sharded informer of T, which set
// configures before it is used.
func register[T runtime.Object, L runtime.Object, F ~func(C, time.Duration) cache.SharedIndexInformer, C any](
	m *Membership, informerFor func(runtime.Object, F) cache.SharedIndexInformer,
	list func(context.Context, metav1.ListOptions) (L, error), watch func(context.Context, metav1.ListOptions) (watch.Interface, error),
	set func(*shardedCache)) (*shardedCache, error) {
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct || list == nil || watch == nil {
		return nil, fmt.Errorf("shard: the sharded informer of %v needs a pointer to a struct type, list and watch functions", typ)
	}
	example := reflect.New(typ.Elem()).Interface().(runtime.Object)
	var made *shardedCache
	informerFor(example, F(func(_ C, resync time.Duration) cache.SharedIndexInformer {
		made = newShardedCache(m, nil, typ.Elem(),
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return list(ctx, o) }, watch)
		set(made)
		inf := cache.NewSharedIndexInformerWithOptions(made, example, cache.SharedIndexInformerOptions{
			ResyncPeriod: resync, Indexers: made.indexers()})
		made.indexer = inf.GetIndexer()
		m.registerCache(made)
		return &shardedInformer{SharedIndexInformer: inf, c: made}
	}))
	if made == nil {
		return nil, fmt.Errorf("shard: the factory already has an informer of %v: make it sharded before asking the factory for it", typ)
	}
	return made, nil
}

// storedIndex names the index by which a sharded informer sees its store
// take each object; it indexes nothing.
const storedIndex = "shard.ctrlkit.io/stored"

// shardedInformer is the informer Informer gives the factory. It wraps
// every transform set on it, so that the cache recognises the
// transformed objects its store takes.
type shardedInformer struct {
	cache.SharedIndexInformer
	c *shardedCache
}

// SetTransform implements cache.SharedInformer.
func (i *shardedInformer) SetTransform(t cache.TransformFunc) error {
	if t == nil {
		if err := i.SharedIndexInformer.SetTransform(nil); err != nil {
			return err
		}
		i.c.transforms.Store(false)
		return nil
	}
	// The cache must know of the transform before the informer runs it.
	was := i.c.transforms.Swap(true)
	err := i.SharedIndexInformer.SetTransform(func(obj any) (any, error) {
		out, err := t(obj)
		i.c.transformed(obj, out, err)
		return out, err
	})
	if err != nil {
		i.c.transforms.Store(was)
	}
	return err
}

// listPage is how many objects a relist asks for per request.
const listPage = 500

// freshnessPoll is how often a watch checks whether the relist before it
// has reached the informer's store, and retries drops that wait for the
// store.
const freshnessPoll = 20 * time.Millisecond

// shardedCache is the cache.ListerWatcher of a sharded informer: it passes
// to the reflector the objects of the keys the replica keeps, relists when
// asked, and tells when the store holds a relist.
//
// It knows what the store holds from what it passed, not from the store,
// which lags behind by the informer's queue: record holds, by store key,
// the object it last passed for each key the store holds or is about to,
// and each such object passed (a watch event's, or a list's last) gets a
// number, which the store's index function (observe) reports once the
// store takes the object; the queue keeps the order, so the store then
// holds everything passed before.
//
// The informer's transform may change the objects passed to it in place
// (client-go allows it, and informer.StripManagedFields does), on the
// reflector's goroutine, after they were passed: for a list, after List
// returned. So the cache never reads an object it passed before its
// transform returned: it works out where an object belongs before passing
// it, and keeps, until the transform returns, a deep copy taken before as
// the object it would pass a deletion of. The deletion it passes for an
// object that moved away (which the transform is given too) is a deep
// copy, sharing no map or slice with the object the store holds, which
// listers and handlers read.
type shardedCache struct {
	m       *Membership
	route   Route
	refs    *references // instead of route, for the objects primaries refer to
	kind    string
	item    reflect.Type
	list    func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch   func(context.Context, metav1.ListOptions) (watch.Interface, error)
	indexer cache.Indexer
	// transforms is set once the informer has a transform: the objects
	// passed may then change until their transform returns.
	transforms atomic.Bool

	// passing is held while something is passed to the reflector and the
	// record changes with it: an event, a list, or drops.
	passing sync.Mutex

	mu sync.Mutex
	// requested is the latest epoch a relist was asked for, listed the
	// epoch of the latest list passed, reported the latest epoch reported
	// held.
	requested, listed, reported uint64
	// seq numbers the objects passed; inFlight maps each that the store
	// has not taken yet to its number, and stored is the highest number
	// taken.
	seq, stored uint64
	inFlight    map[any]uint64
	// listSeq is the number of the latest list's last object or, for an
	// empty list (listEmpty), of the last object passed before it.
	listSeq   uint64
	listEmpty bool
	record    map[string]passed
	// dropDue: objects the replica no longer keeps wait to be dropped
	// until the store has taken them; dropWake wakes the watch to see to
	// it.
	dropDue  bool
	dropWake chan struct{}
	// stop ends the current watch with an expiry, which makes the
	// reflector relist; nil while no watch runs.
	stop chan struct{}
	// again asks for a relist outside the epochs: a primary came to
	// refer to an object the cache does not hold.
	again bool
}

// references is how a cache of referenced objects finds the keys that
// refer to an object: through an index of the primaries' informer.
type references struct {
	indexer cache.Indexer
	index   string
	values  cache.IndexFunc
	// after is the primaries' sharded cache, whose relist of an epoch
	// must be held before this cache lists for the same epoch; nil if
	// the primaries' informer is not sharded.
	after *shardedCache
}

// passed is the object last passed for a key, with its number and
// where it belongs, worked out before it was passed.
type passed struct {
	obj   runtime.Object
	seq   uint64
	place placement
	// asPassed is a deep copy of obj taken before obj was passed, while
	// obj's transform may still be changing obj (then obj must not be
	// read); nil once the transform returned, or if there is none.
	asPassed runtime.Object
}

// readable returns the object p stands for that may be read now: the one
// passed once its transform returned, else the copy taken before.
func (p passed) readable() runtime.Object {
	if p.asPassed != nil {
		return p.asPassed
	}
	return p.obj
}

// placement is where an object belongs: for a cache of referenced
// objects, its own key, by which the primaries refer to it; otherwise the
// key its route names, if ok.
type placement struct {
	key string
	ok  bool
}

// newShardedCache returns the cache of the objects of type item (a
// struct type) that list and watch return; its indexer is set once the
// informer that uses it has one.
func newShardedCache(m *Membership, route Route, item reflect.Type,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)) *shardedCache {
	return &shardedCache{m: m, route: route, kind: item.Name(), item: item, list: list, watch: watch,
		inFlight: map[any]uint64{}, record: map[string]passed{}, dropWake: make(chan struct{}, 1)}
}

// indexers returns the indexes the informer's store needs: by namespace,
// and the one through which the cache sees the store take objects.
func (c *shardedCache) indexers() cache.Indexers {
	return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, storedIndex: c.observe}
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

// keep drops from the store, without a request or an event, the objects
// of the keys v does not want and no claim holds. An object whose latest
// event the store has not taken yet is dropped once it has (see
// maintain), so that the event cannot bring it back.
func (c *shardedCache) keep(v *view) {
	if v == nil {
		return
	}
	c.passing.Lock()
	defer c.passing.Unlock()
	c.drop(v)
}

// drop is keep with c.passing held.
func (c *shardedCache) drop(v *view) {
	type entry struct {
		key string
		passed
	}
	c.mu.Lock()
	entries := make([]entry, 0, len(c.record))
	for k, p := range c.record {
		entries = append(entries, entry{k, p})
	}
	stored := c.stored
	c.mu.Unlock()
	var gone []string
	due := false
	for _, e := range entries {
		if c.keepsAt(v, e.place) {
			continue
		}
		if e.seq > stored {
			due = true
			continue
		}
		gone = append(gone, e.key)
	}
	c.mu.Lock()
	for _, k := range gone {
		delete(c.record, k)
	}
	c.dropDue = due
	c.mu.Unlock()
	if due {
		signal(c.dropWake)
	}
	for _, k := range gone {
		// An explicit key leaves the store's resourceVersion as it is;
		// the object's own would set it back.
		_ = c.indexer.Delete(cache.ExplicitKey(k)) // fails only for objects without a key
	}
}

// keeps reports whether the replica keeps obj under v: an object of no
// key, of a key v wants, or of a key a claim still holds (its reconcile
// has not returned since the key moved away).
func (c *shardedCache) keeps(v *view, obj metav1.Object) bool {
	return c.keepsAt(v, c.place(obj))
}

// place returns where obj belongs. Call it only for an object not passed
// to the reflector yet, or whose transform returned.
func (c *shardedCache) place(obj metav1.Object) placement {
	if c.refs != nil {
		return placement{key: cache.MetaObjectToName(obj).String(), ok: true}
	}
	key, ok := c.route(obj)
	return placement{key: key, ok: ok}
}

// keepsAt is keeps for an object that belongs at p.
func (c *shardedCache) keepsAt(v *view, p placement) bool {
	if c.refs != nil {
		referrers, err := c.refs.indexer.IndexKeys(c.refs.index, p.key)
		if err != nil {
			return false
		}
		return slices.ContainsFunc(referrers, func(key string) bool { return c.keepsKey(v, key) })
	}
	if !p.ok {
		return true
	}
	return c.keepsKey(v, p.key)
}

// keepsKey reports whether the replica keeps the objects of key under v:
// v wants it, or a claim still holds it.
func (c *shardedCache) keepsKey(v *view, key string) bool {
	h := hashKey(key)
	return v.wants(h) || c.m.claimed(h)
}

// referenced sees a primary change from old to new (nil when it was
// added or deleted). A reference it gained to an object the cache does
// not hold asks for a relist; a reference it lost lets the object go if
// no kept primary refers to it any more.
func (c *shardedCache) referenced(old, new any) {
	before, after := c.refs.of(old), c.refs.of(new)
	v := c.m.view.Load()
	o, ok := new.(metav1.Object)
	kept := ok && c.keepsKey(v, cache.MetaObjectToName(o).String())
	var fetch, release bool
	c.mu.Lock()
	if kept {
		for _, k := range after {
			if _, held := c.record[k]; !held && !slices.Contains(before, k) {
				fetch = true
			}
		}
	}
	for _, k := range before {
		if _, held := c.record[k]; held && !slices.Contains(after, k) {
			release = true
		}
	}
	if fetch {
		c.again = true
		if c.stop != nil {
			close(c.stop)
			c.stop = nil
		}
	}
	c.mu.Unlock()
	if release {
		c.keep(v)
	}
}

// of returns the keys of the objects the primary obj refers to.
func (r *references) of(obj any) []string {
	if obj == nil {
		return nil
	}
	keys, err := r.values(obj)
	if err != nil {
		return nil
	}
	return keys
}

// listable reports whether a relist for epoch may begin: for a cache of
// referenced objects, once the primaries' store holds their relist of
// that epoch, as the keys gained in it are kept by what their primaries
// refer to.
func (c *shardedCache) listable(epoch uint64) bool {
	if c.refs == nil || c.refs.after == nil {
		return true
	}
	after := c.refs.after
	after.mu.Lock()
	defer after.mu.Unlock()
	return after.reported >= epoch
}

// awaitListable returns once a relist for epoch may begin, or with ctx's
// error.
func (c *shardedCache) awaitListable(ctx context.Context, epoch uint64) error {
	for !c.listable(epoch) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(freshnessPoll):
		}
	}
	return nil
}

// List implements cache.ListerWatcher with a consistent, paginated list
// (whatever resourceVersion the reflector asks for) of the kept objects.
func (c *shardedCache) List(opts metav1.ListOptions) (runtime.Object, error) {
	return c.ListWithContext(context.Background(), opts)
}

// ListWithContext implements cache.ListerWatcherWithContext.
func (c *shardedCache) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	c.mu.Lock()
	epoch := c.requested
	c.mu.Unlock()
	if err := c.awaitListable(ctx, epoch); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.again = false // what the primaries' store refers to now is listed
	c.mu.Unlock()
	page := metav1.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector, Limit: listPage}
	// The reflector takes the objects of a list of RawExtensions as they
	// are (it copies those of a typed list), so that the store takes the
	// very objects passed, which is how the cache knows when it does.
	out := &metav1.List{}
	var kept []keptItem
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
			o, ok := item.(metav1.Object)
			if !ok {
				continue
			}
			if p := c.place(o); c.keepsAt(v, p) {
				k := keptItem{obj: c.copyOf(item), place: p}
				k.asPassed = c.before(k.obj)
				kept = append(kept, k)
			}
		}
		lm, err := meta.ListAccessor(got)
		if err != nil {
			return nil, fmt.Errorf("shard: list of %s: %w", c.kind, err)
		}
		if out.ResourceVersion == "" {
			out.ResourceVersion = lm.GetResourceVersion()
		}
		if page.Continue = lm.GetContinue(); page.Continue == "" {
			break
		}
	}
	out.Items = make([]runtime.RawExtension, len(kept))
	for i, k := range kept {
		out.Items[i].Object = k.obj
	}
	record := make(map[string]passed, len(kept))
	c.passing.Lock()
	defer c.passing.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(kept) > 0 {
		c.seq++
		c.track(kept[len(kept)-1].obj, c.seq)
	}
	for _, k := range kept {
		if key, err := cache.MetaNamespaceKeyFunc(k.obj); err == nil {
			record[key] = passed{obj: k.obj, seq: c.seq, place: k.place, asPassed: k.asPassed}
		}
	}
	c.record, c.listSeq, c.listEmpty = record, c.seq, len(kept) == 0
	c.listed = max(c.listed, epoch)
	return out, nil
}

// keptItem is an item of a list that the list passes.
type keptItem struct {
	obj, asPassed runtime.Object
	place         placement
}

// before returns the copy of obj, about to be passed, that stands for it
// while its transform may change it: nil without a transform, otherwise a
// deep copy, which shares no map or slice with obj, so that a transform
// changing obj in place (its labels' or annotations' maps included)
// never changes the copy.
func (c *shardedCache) before(obj runtime.Object) runtime.Object {
	if !c.transforms.Load() {
		return nil
	}
	return obj.DeepCopyObject()
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

// track records obj, passed to the reflector with number seq, until the
// store takes it; c.mu is held.
func (c *shardedCache) track(obj any, seq uint64) {
	if reflect.ValueOf(obj).Kind() == reflect.Pointer { // a key of inFlight must be comparable
		c.inFlight[obj] = seq
	}
}

// observe is the index function by which the store reports each object it
// takes (and the old object on an update or delete, which it took
// before); it indexes nothing.
func (c *shardedCache) observe(obj any) ([]string, error) {
	if reflect.ValueOf(obj).Kind() != reflect.Pointer {
		return nil, nil
	}
	c.mu.Lock()
	if seq, ok := c.inFlight[obj]; ok {
		delete(c.inFlight, obj)
		c.stored = max(c.stored, seq)
	}
	c.mu.Unlock()
	return nil, nil
}

// transformed records that the informer's transform returned out and
// err for in, an object passed to the reflector: the store takes out
// instead, and in may be read again.
func (c *shardedCache) transformed(in, out any, err error) {
	if reflect.ValueOf(in).Kind() != reflect.Pointer {
		return
	}
	key, keyErr := cache.MetaNamespaceKeyFunc(in)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && in != out {
		if seq, ok := c.inFlight[in]; ok {
			delete(c.inFlight, in)
			c.track(out, seq)
		}
	}
	p, held := c.record[key]
	if keyErr != nil || !held || any(p.obj) != in {
		return
	}
	p.asPassed = nil
	if o, isObj := out.(runtime.Object); err == nil && isObj {
		p.obj = o
	}
	c.record[key] = p
}

// Watch implements cache.ListerWatcher.
func (c *shardedCache) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return c.WatchWithContext(context.Background(), opts)
}

// WatchWithContext implements cache.ListerWatcherWithContext: the events
// of the kept objects, those of objects passed before that are no longer
// kept as deletions, and an expiry when a relist is asked for.
func (c *shardedCache) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	stop := c.beginWatch()
	if stop == nil {
		return expired(), nil
	}
	inner, err := c.watch(ctx, opts)
	if err != nil {
		c.endWatch(stop)
		return nil, err
	}
	w := &filteredWatch{out: make(chan watch.Event), done: make(chan struct{})}
	go c.pump(inner, w, stop)
	return w, nil
}

// beginWatch returns the channel that a request for a relist closes, for
// a watch about to start, or nil if a relist is due already.
func (c *shardedCache) beginWatch() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.requested > c.listed || c.again {
		return nil
	}
	c.stop = make(chan struct{})
	return c.stop
}

// endWatch records that the watch begun with stop has ended.
func (c *shardedCache) endWatch(stop chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop == stop {
		c.stop = nil
	}
}

// pump passes inner's events through the filter to w until either stops,
// or stop closes, which ends w with an expiry.
func (c *shardedCache) pump(inner watch.Interface, w *filteredWatch, stop chan struct{}) {
	defer close(w.out)
	defer inner.Stop()
	defer c.endWatch(stop)
	for {
		// Poll only while a relist is not known to be held or drops wait.
		var poll <-chan time.Time
		if !c.maintain() {
			poll = time.After(freshnessPoll)
		}
		select {
		case <-w.done:
			return
		case <-stop:
			w.send(expiredEvent())
			return
		case <-poll:
		case <-c.dropWake:
		case e, ok := <-inner.ResultChan():
			if !ok || !c.pass(e, w.send) {
				return
			}
		}
	}
}

// pass passes e through the filter to send, and records what it passed;
// it returns false if send did not take it (the watch was stopped).
func (c *shardedCache) pass(e watch.Event, send func(watch.Event) bool) bool {
	c.passing.Lock()
	defer c.passing.Unlock()
	out, ok := c.filter(e)
	if !ok {
		return true
	}
	key, err := cache.MetaNamespaceKeyFunc(out.Object)
	if err != nil || (out.Type != watch.Added && out.Type != watch.Modified && out.Type != watch.Deleted) {
		return send(out)
	}
	// Record the event before it is sent: the reflector may transform it
	// and the store take it before send returns. Once sent, it is read
	// only after its transform returned.
	var place placement
	var asPassed runtime.Object
	if o, isObj := out.Object.(metav1.Object); isObj && out.Type != watch.Deleted {
		place, asPassed = c.place(o), c.before(out.Object)
	}
	c.mu.Lock()
	prev, had := c.record[key]
	seq := c.seq
	if out.Type == watch.Deleted {
		delete(c.record, key)
	} else {
		c.seq++
		seq = c.seq
		c.track(out.Object, seq)
		c.record[key] = passed{obj: out.Object, seq: seq, place: place, asPassed: asPassed}
	}
	c.mu.Unlock()
	if send(out) {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if out.Type != watch.Deleted {
		delete(c.inFlight, out.Object)
		if c.seq == seq {
			c.seq-- // nothing else was numbered since: no gap
		}
	}
	if had {
		c.record[key] = prev
	} else {
		delete(c.record, key)
	}
	return false
}

// filter decides what the reflector sees of an event: the events of kept
// objects as they are; a change or deletion that leaves an object passed
// before no longer kept (it moved to a key of another replica) as the
// deletion of the object as it was passed (or as its transform made it),
// so that handlers see the key it left; nothing of other objects. The
// deletion is a deep copy: the informer's transform is given it too and
// may change it in place, and it must not change the store's object.
func (c *shardedCache) filter(e watch.Event) (watch.Event, bool) {
	if e.Type != watch.Added && e.Type != watch.Modified && e.Type != watch.Deleted {
		return e, true // bookmarks and errors
	}
	obj, ok := e.Object.(metav1.Object)
	if !ok || c.keeps(c.m.view.Load(), obj) {
		return e, true
	}
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return e, false
	}
	c.mu.Lock()
	held, ok := c.record[key]
	c.mu.Unlock()
	if !ok {
		return e, false
	}
	return watch.Event{Type: watch.Deleted, Object: c.atVersion(held.readable(), obj.GetResourceVersion())}, true
}

// atVersion returns a deep copy of obj at resourceVersion rv, the
// version of the event that made it leave: the reflector resumes its
// watch after the version of the last event, and the store takes it as
// its own. The copy shares no map or slice with obj, which may be the
// object the store holds.
func (c *shardedCache) atVersion(obj runtime.Object, rv string) runtime.Object {
	cp := obj.DeepCopyObject()
	if o, err := meta.Accessor(cp); err == nil {
		o.SetResourceVersion(rv)
	}
	return cp
}

// maintain reports the latest relist once the store holds it and makes
// the drops that waited for the store; it returns whether nothing is left
// to wait for.
func (c *shardedCache) maintain() bool {
	held := c.checkFresh()
	c.mu.Lock()
	due := c.dropDue
	c.mu.Unlock()
	v := c.m.view.Load()
	if !due || v == nil {
		return held // without a view the replica is stopping: nothing to drop
	}
	c.passing.Lock()
	c.drop(v)
	c.passing.Unlock()
	c.mu.Lock()
	due = c.dropDue
	c.mu.Unlock()
	return held && !due
}

// checkFresh reports the latest relist to the membership once the store
// holds it, and whether it does. The store holds a list once it took the
// list's last object, or any object passed after it. It holds an empty
// list once it took any object passed after it, or once it took every
// object passed before it and holds no object the replica keeps: what is
// still queued before the list can then only delete.
func (c *shardedCache) checkFresh() bool {
	c.mu.Lock()
	epoch := c.listed
	if epoch <= c.reported {
		c.mu.Unlock()
		return true
	}
	held := c.stored >= c.listSeq && (!c.listEmpty || c.stored > c.listSeq)
	scan := !held && c.listEmpty && c.stored >= c.listSeq
	c.mu.Unlock()
	if scan {
		held = !c.holdsKept()
	}
	if !held {
		return false
	}
	c.mu.Lock()
	c.reported = max(c.reported, epoch)
	c.mu.Unlock()
	c.m.refreshed(c, epoch)
	return true
}

// holdsKept reports whether the store holds an object the replica keeps.
func (c *shardedCache) holdsKept() bool {
	v := c.m.view.Load()
	for _, obj := range c.indexer.List() {
		if o, ok := obj.(metav1.Object); ok && c.keeps(v, o) {
			return true
		}
	}
	return false
}

// filteredWatch is the watch.Interface a sharded cache gives the reflector.
type filteredWatch struct {
	out      chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

func (w *filteredWatch) Stop()                          { w.stopOnce.Do(func() { close(w.done) }) }
func (w *filteredWatch) ResultChan() <-chan watch.Event { return w.out }

// send hands e to the reader of w; false if w was stopped first.
func (w *filteredWatch) send(e watch.Event) bool {
	select {
	case w.out <- e:
		return true
	case <-w.done:
		return false
	}
}

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

// claimed reports whether a claim of one of the replica's Gates holds the
// key with hash h.
func (m *Membership) claimed(h uint64) bool {
	m.gatesMu.Lock()
	defer m.gatesMu.Unlock()
	for _, g := range m.gates {
		if g.holds(h) {
			return true
		}
	}
	return false
}

// dropUnwanted drops from the sharded caches the objects of the keys the
// view does not want and no claim holds. The membership's driver calls it
// whenever the claims a change of view revoked are released: a replica
// stops owning a key, then its reconciles of the key return, and only
// then do the key's objects leave its caches.
func (m *Membership) dropUnwanted() {
	v := m.view.Load()
	if v == nil {
		return // stopping: nothing is owned, and nothing needs dropping
	}
	m.cachesMu.Lock()
	caches := slices.Clone(m.caches)
	m.cachesMu.Unlock()
	for _, c := range caches {
		c.keep(v)
	}
}
