package shard

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// The simulation's objects are ConfigMaps on the simulated API server:
// one per key, named as the key, which the key's reconciles update,
// delete and create again (in some schedules mostly delete, so that
// replicas relist with nothing to keep); a few children, which move
// between keys while the faults last; and, in half of the schedules, one
// object of no key. A label names an object's key (simRoute).
//
// Every process has a sharded cache of them: the package's shardedCache
// itself (its filter, its record of what it passed, its freshness check,
// its relists and drops), with a client-go indexer as its store. Only the
// reflector and the informer's queue around it are simulated
// (simInformer): the reflector lists through the cache and then watches,
// passing the server's events, delayed by the network, through the
// cache's filter into a queue that reaches the store after a delay; it
// relists when the cache ends its watch, and runs the cache's maintenance
// while the watch runs, as the cache's watch goroutine does.
//
// Each key's object refers (an annotation, simRefIndex) to one of a few
// other objects, which an outside writer creates, updates and deletes and
// the reconciles now and then point elsewhere; every process caches them
// in a second shardedCache made as Referenced makes it, whose referrers
// are the first cache's store, told of each change of it as the
// informer's handlers are, after a delay.
//
// The checks: a claim of a key that another process wrote last finds the
// cache at that write's version or later; a key's object does not leave
// the cache while the process reconciles the key; a deletion reaches the
// store (and the handlers) as the object the store held, so that they are
// told of the key it left; and once the faults have stopped, every live
// replica's cache holds exactly the objects of the keys it wants, and the
// object of no key, at their latest versions. For the referenced
// objects: when a process comes to own a key it gained, its cache holds
// what the key's object referred to when its relist was taken, if that
// existed since before the referenced cache's latest list; and once the
// faults have stopped, it holds exactly the referenced objects of the
// keys it wants, at their latest versions.

// simKeyLabel names the key a simulated object belongs to.
const simKeyLabel = "sim.ctrlkit.io/key"

// simChildren is how many objects move between keys.
const simChildren = 8

// simRefAnnotation names the object a key's object refers to; simRefIndex
// is the index of the references; simRefCount is how many objects can be
// referred to.
const (
	simRefAnnotation = "sim.ctrlkit.io/ref"
	simRefIndex      = "sim-ref"
	simRefCount      = 4
)

// simRefsOf is the values function of simRefIndex.
func simRefsOf(obj any) ([]string, error) {
	if o, ok := obj.(metav1.Object); ok && o.GetAnnotations()[simRefAnnotation] != "" {
		return []string{o.GetAnnotations()[simRefAnnotation]}, nil
	}
	return nil, nil
}

// simRoute is the Route of the simulated objects.
func simRoute(obj metav1.Object) (string, bool) {
	key, ok := obj.GetLabels()[simKeyLabel]
	return key, ok
}

// simObjEvent is a server event as one process's object watch delivers it.
type simObjEvent struct {
	rv    uint64
	typ   watch.EventType
	obj   *corev1.ConfigMap
	ready time.Duration
}

// simQueued is an entry of the informer's queue: a list, or a watch event
// as the cache passed it.
type simQueued struct {
	ready   time.Duration
	replace bool
	list    []any
	rv      string
	event   watch.Event
	// epoch and served: the list's epoch and when the server served it.
	epoch  uint64
	served time.Duration
}

// simTakenList is a list as a store took it.
type simTakenList struct {
	epoch         uint64
	served, taken time.Duration
}

// simInformer is the reflector and the queue of one process's sharded
// informer.
type simInformer struct {
	p     *simProc
	c     *shardedCache
	store cache.Indexer
	// referenced: the informer of the referenced objects, with primary
	// the informer of the key's objects; the referenced informer is
	// told of primary's changes.
	referenced bool
	primary    *simInformer
	// lists are the lists the store took, in order; refTakenAt is, per
	// key, when the store took the reference its object holds now.
	lists      []simTakenList
	refTakenAt map[string]time.Duration
	// notices are the primary's changes its handlers have yet to see.
	notices   []simNotice
	noticeDue bool
	// events are the server's events the current or next watch delivers.
	events []simObjEvent
	queue  []simQueued
	// transforming holds, for each object passed whose in-place
	// transform is halfway (see beginTransform), the labels it had.
	transforming map[*corev1.ConfigMap]map[string]string
	// stop is the current watch's, nil while none runs.
	stop                                chan struct{}
	listing, pumpDue, applyDue, pollDue bool
}

func newSimInformer(p *simProc) *simInformer {
	i := &simInformer{p: p, refTakenAt: map[string]time.Duration{}, transforming: map[*corev1.ConfigMap]map[string]string{}}
	i.c = newShardedCache(p.m, simRoute, reflect.TypeFor[corev1.ConfigMap](), i.list, nil)
	i.c.transforms.Store(p.s.transforms)
	indexers := i.c.indexers()
	indexers[simRefIndex] = simRefsOf
	i.store = cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
	i.c.indexer = i.store
	p.m.registerCache(i.c)
	i.relist()
	return i
}

// newSimRefInformer returns the informer of the objects primary's
// objects refer to, made as Referenced makes it.
func newSimRefInformer(p *simProc, primary *simInformer) *simInformer {
	i := &simInformer{p: p, referenced: true, primary: primary, transforming: map[*corev1.ConfigMap]map[string]string{}}
	i.c = newShardedCache(p.m, nil, reflect.TypeFor[corev1.ConfigMap](), i.list, nil)
	i.c.transforms.Store(p.s.transforms)
	i.c.refs = &references{indexer: primary.store, index: simRefIndex, values: simRefsOf, after: primary.c}
	i.store = cache.NewIndexer(cache.MetaNamespaceKeyFunc, i.c.indexers())
	i.c.indexer = i.store
	p.m.registerCache(i.c)
	i.relist()
	return i
}

// source returns the server's objects of i's kind.
func (i *simInformer) source() map[string]*corev1.ConfigMap {
	if i.referenced {
		return i.p.s.refObjects
	}
	return i.p.s.objects
}

// list is the typed client's List: every object, at the server's latest
// version.
func (i *simInformer) list(context.Context, metav1.ListOptions) (runtime.Object, error) {
	s := i.p.s
	out := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(s.objRV, 10)}}
	objects := i.source()
	for _, k := range sortedKeys(objects) {
		if s.transforms { // the process's own decoded copy, which its transform changes in place
			out.Items = append(out.Items, *objects[k].DeepCopy())
		} else {
			out.Items = append(out.Items, *objects[k])
		}
	}
	return out, nil
}

// relist lists after the reflector's backoff and the request's latency
// (a partition holds the answer back), queues the list for the store, and
// watches from the list's version.
func (i *simInformer) relist() {
	if i.listing {
		return
	}
	i.listing = true
	p, s := i.p, i.p.s
	at := max(s.now+s.dur(0, time.Second)+s.dur(time.Millisecond, s.maxLatency+time.Millisecond), p.partitionedUntil)
	s.at(at, p, "relist served", i.serveList)
}

// serveList lists through the cache once it may list (a referenced
// cache waits for its primaries', polling as ListWithContext does).
func (i *simInformer) serveList() {
	p, s := i.p, i.p.s
	i.c.mu.Lock()
	epoch := i.c.requested
	i.c.mu.Unlock()
	if !i.c.listable(epoch) {
		s.after(p.after(freshnessPoll), p, "", i.serveList)
		return
	}
	{
		s.stats.relists++
		got, err := i.c.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			s.fail("%s's relist: %v", p.identity, err)
			return
		}
		items, err := meta.ExtractList(got)
		if err != nil {
			s.fail("%s's relist: %v", p.identity, err)
			return
		}
		lm, _ := meta.ListAccessor(got)
		from, _ := strconv.ParseUint(lm.GetResourceVersion(), 10, 64)
		i.events = slices.DeleteFunc(i.events, func(e simObjEvent) bool { return e.rv <= from })
		list := make([]any, len(items))
		for n, item := range items {
			list[n] = item
			i.beginTransform(item)
		}
		i.c.mu.Lock()
		listed := i.c.listed
		i.c.mu.Unlock()
		i.enqueue(simQueued{replace: true, list: list, rv: lm.GetResourceVersion(), epoch: listed, served: s.now})
		i.listing = false
		i.watch()
	}
}

// watch starts a watch, as the reflector does after a list; a cache that
// wants a relist already ends it at once.
func (i *simInformer) watch() {
	stop := i.c.beginWatch()
	if stop == nil {
		i.relist()
		return
	}
	i.stop = stop
	i.schedulePump()
	i.maintain()
}

// expire ends the watch if the cache asked for a relist, and relists.
func (i *simInformer) expire() bool {
	select {
	case <-i.stop:
	default:
		return false
	}
	i.c.endWatch(i.stop)
	i.stop = nil
	i.relist()
	return true
}

// wake is what the cache's watch goroutine does when it wakes without an
// event: it ends the watch for a relist, or makes the drops that wait.
func (i *simInformer) wake() {
	if i.stop == nil || i.expire() {
		return
	}
	select {
	case <-i.c.dropWake:
		i.maintain()
	default:
	}
}

// maintain runs the cache's maintenance while a watch runs, and polls
// while it has something to wait for.
func (i *simInformer) maintain() {
	if i.stop == nil {
		return
	}
	held := i.c.maintain()
	i.p.s.checkRefGain(i.p)
	i.p.drainGate()
	if !held && !i.pollDue {
		i.pollDue = true
		i.p.s.after(i.p.after(freshnessPoll), i.p, "", func() {
			i.pollDue = false
			i.maintain()
		})
	}
}

// push queues a server event behind the watch's earlier deliveries.
func (i *simInformer) push(e simObjEvent) {
	if n := len(i.events); n > 0 {
		e.ready = max(e.ready, i.events[n-1].ready)
	}
	i.events = append(i.events, e)
	i.schedulePump()
}

func (i *simInformer) schedulePump() {
	if i.pumpDue || i.stop == nil || len(i.events) == 0 {
		return
	}
	i.pumpDue = true
	i.p.s.at(max(i.events[0].ready, i.p.watcher.stalledUntil), i.p, "", i.pump)
}

// pump passes the watch's next event through the cache's filter.
func (i *simInformer) pump() {
	i.pumpDue = false
	if i.stop == nil || i.expire() || len(i.events) == 0 {
		return
	}
	if i.p.watcher.stalledUntil > i.p.s.now {
		i.schedulePump()
		return
	}
	e := i.events[0]
	i.events = i.events[1:]
	obj := e.obj
	if i.p.s.transforms { // the process's own decoded copy, which its transform changes in place
		obj = obj.DeepCopy()
	}
	i.c.pass(watch.Event{Type: e.typ, Object: obj}, i.send)
	i.maintain()
	i.schedulePump()
}

// send is the reflector taking a watch event: it queues it for the store.
func (i *simInformer) send(e watch.Event) bool {
	i.beginTransform(e.Object)
	i.enqueue(simQueued{event: e})
	return true
}

// beginTransform runs the first half of the informer's in-place transform
// of obj, which the reflector has just taken: it rebuilds the labels in
// their own map (empty until the second half) and strips the managed
// fields. The second half (finishTransform) runs when the store takes
// obj: in between, the cache must not read obj. Changing obj's maps in
// place, it would change any object sharing them: obj must share none
// with the object the store holds under its key, nor with another object
// being transformed.
func (i *simInformer) beginTransform(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !i.p.s.transforms || !ok {
		return
	}
	if slices.ContainsFunc(cm.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == simHalfTransformed }) {
		i.p.s.fail("%s's cache passed %s as a transform left it halfway", i.p.identity, cacheKey(cm))
	}
	if cm.Labels != nil {
		labels := reflect.ValueOf(cm.Labels).UnsafePointer()
		if held, ok, _ := i.store.Get(cm); ok && reflect.ValueOf(held.(*corev1.ConfigMap).Labels).UnsafePointer() == labels {
			i.p.s.fail("%s's cache passed %s sharing its labels with the object its store holds", i.p.identity, cacheKey(cm))
		}
		for other := range i.transforming {
			if other != cm && reflect.ValueOf(other.Labels).UnsafePointer() == labels {
				i.p.s.fail("%s's cache passed %s sharing its labels with another object being transformed", i.p.identity, cacheKey(cm))
			}
		}
	}
	i.transforming[cm] = maps.Clone(cm.Labels)
	clear(cm.Labels) // in place, as client-go allows
	cm.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: simHalfTransformed}}
}

// simHalfTransformed marks the managed fields of an object whose
// transform is halfway.
const simHalfTransformed = "sim-half-transformed"

// finishTransform runs the second half of obj's transform, and returns
// to the cache, as the informer's transform does.
func (i *simInformer) finishTransform(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	labels, halfway := i.transforming[cm]
	if !halfway {
		return
	}
	delete(i.transforming, cm)
	maps.Copy(cm.Labels, labels) // in place: the map beginTransform emptied
	cm.ManagedFields = nil
	i.c.transformed(obj, obj, nil)
}

func (i *simInformer) enqueue(q simQueued) {
	s := i.p.s
	q.ready = s.now + s.dur(0, s.maxWatchDelay)
	if n := len(i.queue); n > 0 {
		q.ready = max(q.ready, i.queue[n-1].ready)
	}
	i.queue = append(i.queue, q)
	i.scheduleApply()
}

func (i *simInformer) scheduleApply() {
	if i.applyDue || len(i.queue) == 0 {
		return
	}
	i.applyDue = true
	i.p.s.at(i.queue[0].ready, i.p, "", i.apply)
}

// apply hands the queue's next entry to the store, as the informer does.
func (i *simInformer) apply() {
	i.applyDue = false
	q := i.queue[0]
	i.queue = i.queue[1:]
	defer i.scheduleApply()
	if q.replace {
		for _, obj := range q.list {
			i.finishTransform(obj)
		}
		if s := i.p.s; s.verbose {
			s.logf("%s's store takes a list of %d at %s", i.p.identity, len(q.list), q.rv)
		}
		before := map[string]any{}
		for _, obj := range i.store.List() {
			before[cacheKey(obj)] = obj
		}
		if err := i.store.Replace(q.list, q.rv); err != nil {
			i.p.s.fail("%s's store: %v", i.p.identity, err)
		}
		i.lists = append(i.lists, simTakenList{epoch: q.epoch, served: q.served, taken: i.p.s.now})
		for _, obj := range q.list {
			i.changed(before[cacheKey(obj)], obj)
			delete(before, cacheKey(obj))
		}
		for _, k := range sortedKeys(before) {
			i.changed(before[k], nil)
		}
		return
	}
	i.finishTransform(q.event.Object)
	old, _, _ := i.store.Get(q.event.Object)
	defer func() {
		now, _, _ := i.store.Get(q.event.Object)
		i.changed(old, now)
	}()
	if s := i.p.s; s.verbose {
		s.logf("%s's store takes %s %s@%s", i.p.identity, q.event.Type, cacheKey(q.event.Object), q.event.Object.(metav1.Object).GetResourceVersion())
	}
	switch q.event.Type {
	case watch.Added, watch.Modified:
		if _, ok, _ := i.store.Get(q.event.Object); ok {
			_ = i.store.Update(q.event.Object)
		} else {
			_ = i.store.Add(q.event.Object)
		}
	case watch.Deleted:
		held, ok, _ := i.store.Get(q.event.Object)
		if ok {
			was, _ := simRoute(held.(metav1.Object))
			told, _ := simRoute(q.event.Object.(metav1.Object))
			if was != told {
				i.p.s.fail("%s's handlers are told that %s left key %q; its cache held it under %q",
					i.p.identity, cacheKey(held), told, was)
			}
		}
		_ = i.store.Delete(q.event.Object)
	}
}

// changed records a change of the store from old to new (nil when
// absent) and tells the referenced informer of a primary's change after
// a delay, as the informer's handlers are told.
func (i *simInformer) changed(old, new any) {
	if i.referenced || (old == nil && new == nil) {
		return
	}
	oldRefs, _ := simRefsOf(old)
	newRefs, _ := simRefsOf(new)
	key := cacheKey(old)
	if new != nil {
		key = cacheKey(new)
	}
	switch {
	case new == nil:
		delete(i.refTakenAt, key)
	case old == nil || !slices.Equal(oldRefs, newRefs):
		i.refTakenAt[key] = i.p.s.now
	}
	s := i.p.s
	ready := s.now + s.dur(0, s.maxWatchDelay+time.Millisecond)
	if n := len(i.notices); n > 0 {
		ready = max(ready, i.notices[n-1].ready) // handlers are told in order
	}
	i.notices = append(i.notices, simNotice{ready: ready, old: old, new: new})
	i.scheduleNotice()
}

// simNotice is a change of a primary that the referenced informer is
// told of once ready.
type simNotice struct {
	ready    time.Duration
	old, new any
}

func (i *simInformer) scheduleNotice() {
	if i.noticeDue || len(i.notices) == 0 {
		return
	}
	i.noticeDue = true
	p := i.p
	p.s.at(i.notices[0].ready, p, "", func() {
		i.noticeDue = false
		n := i.notices[0]
		i.notices = i.notices[1:]
		if !p.dead && p.refInf != nil {
			p.refInf.c.referenced(n.old, n.new)
			p.refInf.wake()
		}
		i.scheduleNotice()
	})
}

func cacheKey(obj any) string {
	k, _ := cache.MetaNamespaceKeyFunc(obj)
	return k
}

// cachedVersion returns the version of key's object in p's cache, 0 if
// it holds none.
func (p *simProc) cachedVersion(key string) uint64 {
	obj, ok, _ := p.inf.store.GetByKey(key)
	if !ok {
		return 0
	}
	rv, _ := strconv.ParseUint(obj.(metav1.Object).GetResourceVersion(), 10, 64)
	return rv
}

// current reports whether p's cache holds key's object at its latest
// version.
func (s *sim) current(p *simProc, key string) bool {
	obj, ok := s.objects[key]
	return ok && strconv.FormatUint(p.cachedVersion(key), 10) == obj.ResourceVersion
}

// --- the server's objects ---

func (s *sim) addObjects() {
	s.deleteRate = []float64{0, 0.3, 0.9}[s.rng.IntN(3)]
	for _, k := range s.keys {
		s.put(k, k)
	}
	for n := range simChildren {
		s.put("ns/child-"+strconv.Itoa(n), s.keys[s.rng.IntN(len(s.keys))])
	}
	if s.chance(0.5) {
		s.put("ns/of-no-key", "")
	}
	for n := range simRefCount - 1 { // the last is referred to before it exists
		s.putRef("ns/ref-" + strconv.Itoa(n))
	}
}

// putRef stores a new version of the referenced object named name, or
// creates it, and sends it to every process's referenced watch.
func (s *sim) putRef(name string) {
	s.objRV++
	ns, n, _ := cache.SplitMetaNamespaceKey(name)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n, ResourceVersion: strconv.FormatUint(s.objRV, 10)}}
	typ := watch.Modified
	if _, ok := s.refObjects[name]; !ok {
		typ = watch.Added
		s.refCreatedAt[name] = s.now
	}
	s.refObjects[name] = obj
	s.sendRef(typ, obj)
}

// removeRef deletes the referenced object named name.
func (s *sim) removeRef(name string) {
	s.objRV++
	obj := s.refObjects[name].DeepCopy()
	obj.ResourceVersion = strconv.FormatUint(s.objRV, 10)
	delete(s.refObjects, name)
	s.sendRef(watch.Deleted, obj)
}

func (s *sim) sendRef(typ watch.EventType, obj *corev1.ConfigMap) {
	s.writtenAt[cacheKey(obj)] = s.now
	for _, q := range s.procs {
		if !q.dead {
			q.refInf.push(simObjEvent{rv: s.objRV, typ: typ, obj: obj, ready: s.now + s.dur(0, s.maxWatchDelay)})
		}
	}
}

// scheduleRefWrites has an outside writer create, update and delete the
// referenced objects now and then while the faults last.
func (s *sim) scheduleRefWrites() {
	s.after(s.dur(0, 700*time.Millisecond), nil, "", func() {
		if s.now >= s.calmAt {
			return
		}
		name := "ns/ref-" + strconv.Itoa(s.rng.IntN(simRefCount))
		if _, ok := s.refObjects[name]; ok && s.chance(0.2) {
			s.removeRef(name)
		} else {
			s.putRef(name)
		}
		s.scheduleRefWrites()
	})
}

// refFor returns the reference of key's object: its own, which a write
// before the faults stop sometimes points elsewhere.
func (s *sim) refFor(key string) string {
	if s.refOf[key] == "" || (s.now < s.calmAt && s.chance(0.2)) {
		s.refOf[key] = "ns/ref-" + strconv.Itoa(s.rng.IntN(simRefCount))
	}
	return s.refOf[key]
}

// put stores a new version of the object named name, in key (none if
// empty), and sends it to every process's object watch.
func (s *sim) put(name, key string) {
	s.objRV++
	ns, n, _ := cache.SplitMetaNamespaceKey(name)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n, ResourceVersion: strconv.FormatUint(s.objRV, 10)}}
	if key != "" {
		obj.Labels = map[string]string{simKeyLabel: key}
	}
	if name == key {
		obj.Annotations = map[string]string{simRefAnnotation: s.refFor(key)}
	}
	typ := watch.Added
	if _, ok := s.objects[name]; ok {
		typ = watch.Modified
	}
	s.objects[name] = obj
	s.send(typ, obj)
}

// remove deletes the object named name.
func (s *sim) remove(name string) {
	s.objRV++
	obj := s.objects[name].DeepCopy()
	obj.ResourceVersion = strconv.FormatUint(s.objRV, 10)
	delete(s.objects, name)
	s.send(watch.Deleted, obj)
}

// send sends an event of obj to every process's object watch.
func (s *sim) send(typ watch.EventType, obj *corev1.ConfigMap) {
	s.writtenAt[cacheKey(obj)] = s.now
	for _, q := range s.procs {
		if !q.dead {
			q.inf.push(simObjEvent{rv: s.objRV, typ: typ, obj: obj, ready: s.now + s.dur(0, s.maxWatchDelay)})
		}
	}
}

// write is p's reconcile of key writing the key's object: an update, a
// deletion or a creation, or nothing if a deleted object stays deleted.
func (s *sim) write(p *simProc, key string) {
	_, exists := s.objects[key]
	switch {
	case exists && s.chance(s.deleteRate):
		s.remove(key)
		p.active[key].cached = false // its own deletion
	case exists || !s.chance(s.deleteRate):
		s.put(key, key)
	default:
		return
	}
	s.stats.writes++
	s.lastWriter[key] = p
	if s.verbose {
		s.logf("%s writes %s: %s", p.identity, key, s.describe(key))
	}
}

func (s *sim) describe(name string) string {
	if obj, ok := s.objects[name]; ok {
		return "version " + obj.ResourceVersion
	}
	return "deleted at " + strconv.FormatUint(s.objRV, 10)
}

// scheduleMoves moves a child to another key now and then while the
// faults last.
func (s *sim) scheduleMoves() {
	s.after(s.dur(0, 500*time.Millisecond), nil, "", func() {
		if s.now >= s.calmAt {
			return
		}
		name := "ns/child-" + strconv.Itoa(s.rng.IntN(simChildren))
		s.put(name, s.keys[s.rng.IntN(len(s.keys))])
		s.scheduleMoves()
	})
}

// checkFresh fails the run if p claims key with a cache older than the
// last write of another process.
func (s *sim) checkFresh(p *simProc, key string) {
	w := s.lastWriter[key]
	if w == nil || w == p {
		return
	}
	got := p.cachedVersion(key)
	obj, exists := s.objects[key]
	if !exists {
		if got != 0 {
			s.fail("%s claimed %s with its cache holding version %d, which %s deleted", p.identity, key, got, w.identity)
		}
		return
	}
	if want, _ := strconv.ParseUint(obj.ResourceVersion, 10, 64); got < want {
		s.fail("%s claimed %s with its cache at version %d, before the last write (%d) of %s",
			p.identity, key, got, want, w.identity)
	}
}

// checkKept fails the run if the object of a key p reconciles left p's
// cache since the claim.
func (s *sim) checkKept(p *simProc) {
	dropped := false
	for k, r := range p.active {
		if r.cached && p.cachedVersion(k) == 0 {
			dropped = true
			break
		}
	}
	if !dropped {
		return
	}
	// The first key in order, so that a seed fails alike every time.
	for _, k := range sortedKeys(p.active) {
		if r := p.active[k]; r.cached && p.cachedVersion(k) == 0 {
			s.fail("%s's cache dropped the object of %s while %s reconciled it", p.identity, k, p.identity)
			return
		}
	}
}

// checkCaches checks, once the faults have stopped, that every live
// replica's cache holds the objects of the keys it wants and of no key,
// and no others, at their latest versions; objects written within the
// last second are left out, as their events may be on their way.
func (s *sim) checkCaches() string {
	for _, p := range s.live() {
		v := p.m.view.Load()
		for _, name := range sortedKeys(s.objects) {
			obj := s.objects[name]
			key, placed := simRoute(obj)
			h := hashKey(key)
			want := !placed || v.wants(h)
			if (!want && p.m.claimed(h)) || s.now-s.writtenAt[name] <= time.Second {
				continue // its reconcile has not returned yet, or the write is on its way
			}
			got, held, _ := p.inf.store.GetByKey(name)
			switch {
			case want && !held:
				return p.identity + "'s cache lacks " + name + " of key " + key
			case !want && held:
				return p.identity + "'s cache holds " + name + ", of key " + key + " which it does not want"
			case held && got.(metav1.Object).GetResourceVersion() != obj.ResourceVersion:
				return p.identity + "'s cache holds " + name + " at version " + got.(metav1.Object).GetResourceVersion() +
					", not its latest " + obj.ResourceVersion
			}
		}
		for _, name := range sortedStrings(p.inf.store.ListKeys()) {
			if _, ok := s.objects[name]; !ok && s.now-s.writtenAt[name] > time.Second {
				return p.identity + "'s cache holds " + name + ", which was deleted"
			}
		}
		if msg := s.checkRefCaches(p); msg != "" {
			return msg
		}
	}
	return ""
}

// checkRefGain fails the run if p came to own a key it gained while its
// referenced cache lacks what the key's object referred to when the
// primaries' relist of the gain was taken: an object that existed since
// before the referenced cache's latest list.
func (s *sim) checkRefGain(p *simProc) {
	v := p.m.view.Load()
	if v == p.ownedIn {
		return // keys are gained only by a new view
	}
	p.ownedIn = v
	if p.owned == nil {
		p.owned = map[string]bool{}
	}
	for i, k := range s.keys {
		owns := v.owns(s.keyHashes[i])
		was := p.owned[k]
		p.owned[k] = owns
		if !owns || was {
			continue
		}
		obj, ok, _ := p.inf.store.GetByKey(k)
		refs, _ := simRefsOf(obj)
		ri := p.refInf
		if !ok || len(refs) == 0 || len(ri.lists) == 0 {
			continue
		}
		last := ri.lists[len(ri.lists)-1]
		taken := time.Duration(-1) // when the primaries' store took its list of that epoch
		for _, l := range p.inf.lists {
			if l.epoch >= last.epoch {
				taken = l.taken
				break
			}
		}
		r := refs[0]
		if _, exists := s.refObjects[r]; taken < 0 || p.inf.refTakenAt[k] > taken || !exists || s.refCreatedAt[r] >= last.served {
			continue
		}
		if _, held, _ := ri.store.GetByKey(r); !held {
			s.fail("%s owns %s, which it gained, while its referenced cache lacks %s, which %s's object refers to (the referenced list of epoch %d was served at %v, the primaries' list of that epoch taken at %v)",
				p.identity, k, r, k, last.epoch, last.served, taken)
			return
		}
	}
}

// checkRefCaches is checkCaches for the referenced objects: p's cache
// holds those the objects of the keys p wants refer to, at their latest
// versions, and no others; objects and references written within the
// last three seconds are left out, as a relist may be on its way.
func (s *sim) checkRefCaches(p *simProc) string {
	v := p.m.view.Load()
	want, skip := map[string]bool{}, map[string]bool{}
	for _, k := range s.keys {
		r, h := s.refOf[k], hashKey(k)
		_, exists := s.objects[k]
		switch {
		case s.now-s.writtenAt[k] <= 3*time.Second || (!v.wants(h) && p.m.claimed(h)):
			skip[r] = true // written (or deleted) just now, or its reconcile has not returned
		case exists && v.wants(h):
			want[r] = true
		}
	}
	for _, r := range sortedKeys(s.refObjects) {
		if skip[r] || s.now-s.writtenAt[r] <= 3*time.Second {
			continue
		}
		got, held, _ := p.refInf.store.GetByKey(r)
		switch {
		case want[r] && !held:
			return p.identity + "'s referenced cache lacks " + r
		case !want[r] && held:
			return p.identity + "'s referenced cache holds " + r + ", which no key it wants refers to"
		case held && got.(metav1.Object).GetResourceVersion() != s.refObjects[r].ResourceVersion:
			return p.identity + "'s referenced cache holds " + r + " at version " + got.(metav1.Object).GetResourceVersion() +
				", not its latest " + s.refObjects[r].ResourceVersion
		}
	}
	for _, name := range sortedStrings(p.refInf.store.ListKeys()) {
		if _, ok := s.refObjects[name]; !ok && s.now-s.writtenAt[name] > 3*time.Second {
			return p.identity + "'s referenced cache holds " + name + ", which was deleted"
		}
	}
	return ""
}

// checkGain fails the run if the view p applies owns a key its view
// before did not while mayGain says it cannot.
func (s *sim) checkGain(p *simProc, from, v *view) {
	if mayGain(from, v) {
		return
	}
	now, before := s.ownedByLists(v), s.ownedByLists(from)
	for i, k := range s.keys {
		if now[i] && !before[i] {
			s.fail("%s gains %s from view %q to %q, which mayGain denies", p.identity, k, from.id(), v.id())
			return
		}
	}
}

// ownedByLists tells, for each key, whether v owns it by its member lists;
// a view does not change, so each is worked out once.
func (s *sim) ownedByLists(v *view) []bool {
	if owned, ok := s.byLists[v]; ok {
		return owned
	}
	owned := make([]bool, len(s.keys))
	for i, h := range s.keyHashes {
		owned[i] = v.ownsByLists(h)
	}
	s.byLists[v] = owned
	return owned
}

func sortedStrings(s []string) []string {
	slices.Sort(s)
	return s
}
