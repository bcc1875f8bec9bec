package shard

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/owner"
)

// The tests of this file run one sharded Secret informer against a
// scripted API server (probeServer) with views set by hand, and hold the
// informer at chosen points: a stall blocks the informer's processing
// goroutine in an index function (while it stores an object of a given
// name), or its reflector in the factory's transform (while it queues
// one), so that an event or a relist can be kept from the store for as
// long as a test needs.

const (
	probeWait = 60 * time.Second
	probePoll = 5 * time.Millisecond
)

var probeOwnerKind = schema.GroupKind{Kind: "ConfigMap"}

// probeServer plays the API server of Secrets: a list answers with its
// objects at its resourceVersion, and each watch is a fake watcher that the
// test feeds through watches.
type probeServer struct {
	mu      sync.Mutex
	objects map[string]*corev1.Secret
	rv      int
	lists   int
	// listGate, if set, holds every list after the first until closed.
	listGate chan struct{}
	// unbuffered makes every send to a watch wait until it is taken.
	unbuffered bool
	watches    chan *watch.FakeWatcher
}

// put stores obj at the next resourceVersion and returns the stored copy.
func (s *probeServer) put(obj *corev1.Secret) *corev1.Secret {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	obj = obj.DeepCopy()
	obj.ResourceVersion = strconv.Itoa(s.rv)
	s.objects[obj.Name] = obj
	return obj.DeepCopy()
}

// remove deletes the object named name at the next resourceVersion.
func (s *probeServer) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	delete(s.objects, name)
}

func (s *probeServer) list(ctx context.Context, _ metav1.ListOptions) (*corev1.SecretList, error) {
	s.mu.Lock()
	s.lists++
	hold := s.lists > 1 && s.listGate != nil && ctx.Value(probeList{}) == nil
	s.mu.Unlock()
	if hold {
		<-s.listGate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	list := &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(s.rv)}}
	for _, name := range sortedKeys(s.objects) {
		list.Items = append(list.Items, *s.objects[name].DeepCopy())
	}
	return list, nil
}

func (s *probeServer) watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewFakeWithChanSize(16, false)
	if s.unbuffered {
		w = watch.NewFake()
	}
	s.watches <- w
	return w, nil
}

// stall blocks the goroutine that meets the object named name the first
// time, until release is closed; entered is closed when it blocks. An
// empty name never blocks.
type stall struct {
	mu      sync.Mutex
	name    string
	entered chan struct{}
	release chan struct{}
}

func (s *stall) set(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.name, s.entered, s.release = name, make(chan struct{}), make(chan struct{})
}

func (s *stall) hit(obj any) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	s.mu.Lock()
	if s.name == "" || o.GetName() != s.name {
		s.mu.Unlock()
		return
	}
	s.name = ""
	entered, release := s.entered, s.release
	s.mu.Unlock()
	close(entered)
	<-release
}

// probe is one replica's sharded Secret informer and a Gate of its
// membership, whose views the test applies by hand.
type probe struct {
	t      *testing.T
	m      *Membership
	server *probeServer
	gate   *Gate[string]
	inf    cache.SharedIndexInformer
	typed  cache.TypedSharedIndexInformer[*corev1.Secret]
	self   string
	other  string
	// atIndex stalls the informer's processing, atTransform its reflector.
	atIndex, atTransform stall
	// copying makes the factory's transform return copies.
	copying atomic.Bool
	run     func()
}

func newProbe(t *testing.T, route Route) *probe {
	t.Helper()
	m, err := New(Config{Client: fake.NewClientset(), Namespace: "ops", Group: "g", Identity: "self"})
	require.NoError(t, err)
	p := &probe{t: t, m: m, self: m.Name(), other: LeaseName("g", "other"),
		server: &probeServer{objects: map[string]*corev1.Secret{}, watches: make(chan *watch.FakeWatcher, 16)}}
	factory := informers.NewSharedInformerFactoryWithOptions(fake.NewClientset(), 0, informers.WithTransform(func(obj any) (any, error) {
		p.atTransform.hit(obj)
		if o, ok := obj.(*corev1.Secret); ok && p.copying.Load() {
			return o.DeepCopy(), nil
		}
		return obj, nil
	}))
	require.NoError(t, Informer[*corev1.Secret](m, factory.InformerFor, p.server.list, p.server.watch, route))
	p.inf = factory.Core().V1().Secrets().Informer()
	p.typed = factory.Core().V1().Secrets().TypedInformer()
	require.NoError(t, p.inf.AddIndexers(cache.Indexers{"probe": func(obj any) ([]string, error) {
		p.atIndex.hit(obj)
		return nil, nil
	}}))
	p.gate = NewGate(m, Keys[string]{String: func(k string) string { return k }, List: func() []string { return nil }})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		// Let every stalled goroutine go before the informer stops.
		for _, s := range []*stall{&p.atIndex, &p.atTransform} {
			s.mu.Lock()
			if s.release != nil {
				select {
				case <-s.release:
				default:
					close(s.release)
				}
			}
			s.mu.Unlock()
		}
		cancel()
		factory.Shutdown()
	})
	p.run = func() {
		factory.Start(ctx.Done())
		require.True(t, cache.WaitForCacheSync(ctx.Done(), p.inf.HasSynced))
	}
	return p
}

// start runs the informer and waits for its first list.
func (p *probe) startInformer() { p.run() }

// view returns the view of this replica working under members.
func (p *probe) view(members ...string) *view {
	return newView(nil, p.self, members, members, nil, nil, time.Hour)
}

// apply makes v the replica's view, waits until the claims it revokes
// are released and drops what the replica no longer keeps, as
// Membership.Run does.
func (p *probe) apply(v *view) {
	for _, ch := range p.m.apply(v) {
		<-ch
	}
	p.m.dropUnwanted()
}

// nameOf returns a name "<prefix>-<n>" whose key ("app/" and the name)
// belongs to owner among members, other than those in not.
func (p *probe) nameOf(prefix string, members []string, owner string, not ...string) string {
	for i := range 10000 {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if Assign(members, "app/"+name) == owner && !slices.Contains(not, name) {
			return name
		}
	}
	p.t.Fatalf("no name for %s", owner)
	return ""
}

func (p *probe) stored() []string {
	keys := p.inf.GetStore().ListKeys()
	slices.Sort(keys)
	return keys
}

func probeSecret(name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, UID: types.UID("uid-" + name)}}
}

// probeChild returns the Secret name controlled by the ConfigMap owner.
func probeChild(name, owner string) *corev1.Secret {
	s := probeSecret(name)
	s.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: owner, UID: types.UID("uid-" + owner)}},
		corev1.SchemeGroupVersion.WithKind("ConfigMap"))}
	return s
}

// TestInformerOwnsGainOnceRelistApplied: with client-go's AtomicFIFO gate
// off, where the store keeps no resourceVersion, a key this replica gains
// is not owned while the informer is still storing the relist of the gain.
func TestInformerOwnsGainOnceRelistApplied(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.AtomicFIFO, false)
	p := newProbe(t, ByName)
	two := []string{p.self, p.other}
	mine, gained := p.nameOf("s", two, p.self), p.nameOf("s", two, p.other)
	later := p.nameOf("z", two, p.self) // listed after gained
	for _, name := range []string{mine, gained, later} {
		p.server.put(probeSecret(name))
	}
	p.apply(p.view(two...))
	p.startInformer()
	require.Equal(t, []string{"app/" + mine, "app/" + later}, p.stored())

	// The relist is held while the informer stores it, before its last
	// object.
	p.atIndex.set(gained)
	p.m.apply(p.view(p.self))
	<-p.atIndex.entered
	assert.Never(t, func() bool { return p.gate.Owns("app/" + gained) }, time.Second, probePoll,
		"%s owned while the relist is not in the store", gained)
	close(p.atIndex.release)
	require.Eventually(t, func() bool { return p.gate.Owns("app/" + gained) }, probeWait, probePoll)
	assert.Contains(t, p.stored(), "app/"+gained)
}

// probeList marks the context of a list the test makes itself, which the
// probeServer never holds.
type probeList struct{}

// TestFreshnessNeedsThisList: the check that lets a gained key be owned
// accepts only a store that holds the relist of the gain, also when the
// store is at the revision the relist is served at without it (a quiet
// kind, or a bookmark at the current revision just before the relist) or
// keeps no revision (AtomicFIFO off). The informer's own relist is held at
// the server while the test lists through the informer's ListerWatcher as
// the reflector does, so that a list is served and not stored.
func TestFreshnessNeedsThisList(t *testing.T) {
	tests := []struct {
		name     string
		atomic   bool
		bookmark bool
		// empty: the relist has no object, and the store one whose
		// deletion is still on its way.
		empty bool
	}{
		{name: "default gates, quiet kind", atomic: true},
		{name: "default gates, bookmark at the current revision", atomic: true, bookmark: true},
		{name: "AtomicFIFO off", atomic: false},
		{name: "default gates, empty relist", atomic: true, empty: true},
		{name: "AtomicFIFO off, empty relist", atomic: false, empty: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.AtomicFIFO, tt.atomic)
			p := newProbe(t, ByName)
			two := []string{p.self, p.other}
			mine, gained := p.nameOf("s", two, p.self), p.nameOf("s", two, p.other)
			if !tt.empty {
				p.server.put(probeSecret(gained))
			}
			p.server.listGate = make(chan struct{})
			p.apply(p.view(two...))
			p.startInformer()
			w := <-p.server.watches
			last := p.server.put(probeSecret(mine))
			w.Add(last)
			if tt.bookmark {
				// A write the filter drops, then a bookmark at its revision.
				last = p.server.put(probeSecret(p.nameOf("s", two, p.other, gained)))
				w.Action(watch.Bookmark, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{ResourceVersion: last.ResourceVersion}})
			}
			require.Eventually(t, func() bool {
				return slices.Contains(p.stored(), "app/"+mine) && (!tt.atomic || p.inf.GetIndexer().LastStoreSyncResourceVersion() == last.ResourceVersion)
			}, probeWait, probePoll)
			if tt.empty {
				p.server.remove(mine) // its deletion is not delivered before the relist
			}

			p.m.apply(p.view(p.self)) // gains the other's keys; the informer's relist is held
			c := p.m.caches[0].(*shardedCache)
			_, err := c.ListWithContext(context.WithValue(context.Background(), probeList{}, true), metav1.ListOptions{})
			require.NoError(t, err)
			assert.False(t, c.checkFresh(), "a relist the store does not hold counts as held")
			assert.False(t, p.gate.Owns("app/"+gained), "%s owned without its objects in the store %v", gained, p.stored())

			close(p.server.listGate)
			require.Eventually(t, func() bool { return p.gate.Owns("app/" + gained) }, probeWait, probePoll)
			if tt.empty {
				assert.Empty(t, p.stored())
			} else {
				assert.Contains(t, p.stored(), "app/"+gained)
			}
		})
	}
}

// TestFilterPassesMoveOfQueuedObject: an object that moves to another
// replica's key while the event that brought it is still on its way to
// the store leaves the store.
func TestFilterPassesMoveOfQueuedObject(t *testing.T) {
	p := newProbe(t, ByController(probeOwnerKind))
	p.server.unbuffered = true // a send returns once the informer's watch took the event
	two := []string{p.self, p.other}
	mine, theirs := p.nameOf("cm", two, p.self), p.nameOf("cm", two, p.other)
	p.apply(p.view(two...))
	p.startInformer()
	w := <-p.server.watches

	// Hold the informer's processing, queue the add, then hold the
	// reflector and let the processing go: the add stays queued while
	// the store is free.
	p.atIndex.set("stall")
	w.Add(p.server.put(probeChild("stall", mine)))
	<-p.atIndex.entered
	w.Add(p.server.put(probeChild("moved", mine)))
	p.atTransform.set("blocker")
	w.Add(p.server.put(probeChild("blocker", mine)))
	<-p.atTransform.entered
	close(p.atIndex.release)
	require.Eventually(t, func() bool { return slices.Contains(p.stored(), "app/stall") }, probeWait, probePoll)

	// The move while the add is queued: the filter's verdict, then the
	// move itself through the watch.
	move := watch.Event{Type: watch.Modified, Object: p.server.put(probeChild("moved", theirs))}
	got, passed := p.m.caches[0].(*shardedCache).filter(move)
	if assert.True(t, passed, "the move of a Secret whose add is on its way is dropped") {
		assert.Equal(t, watch.Deleted, got.Type)
	}
	w.Action(move.Type, move.Object)
	close(p.atTransform.release)
	w.Add(p.server.put(probeChild("marker", mine)))
	require.Eventually(t, func() bool { return slices.Contains(p.stored(), "app/marker") }, probeWait, probePoll)
	assert.NotContains(t, p.stored(), "app/moved", "the copy of a Secret moved to another replica's key stays")
}

// TestFilterDeletesMovedObjectAsHeld: a child moved from a key of this
// replica to another replica's reaches the handlers as a deletion of the
// child as this replica held it, so that owner.EnqueueOwner tells the old
// owner that its child left.
func TestFilterDeletesMovedObjectAsHeld(t *testing.T) {
	p := newProbe(t, ByController(probeOwnerKind))
	two := []string{p.self, p.other}
	mine, theirs := p.nameOf("cm", two, p.self), p.nameOf("cm", two, p.other)
	var mu sync.Mutex
	var told []string
	_, err := p.typed.AddTypedEventHandler(owner.EnqueueOwner[*corev1.Secret](probeOwnerKind, informer.QueueFunc[cache.ObjectName](func(k cache.ObjectName) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, k.Name)
	})))
	require.NoError(t, err)
	p.apply(p.view(two...))
	p.startInformer()
	w := <-p.server.watches

	w.Add(p.server.put(probeChild("child", mine)))
	require.Eventually(t, func() bool { return slices.Contains(p.stored(), "app/child") }, probeWait, probePoll)
	w.Modify(p.server.put(probeChild("child", theirs)))
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(told) == 2
	}, probeWait, probePoll)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{mine, mine}, told, "the old owner is told when its child is added and when it leaves")
	assert.NotContains(t, p.stored(), "app/child")
}

// TestDropKeepsStoreVersion: dropping the objects of keys the replica no
// longer wants leaves the store's resourceVersion where it was.
func TestDropKeepsStoreVersion(t *testing.T) {
	p := newProbe(t, ByName)
	two := []string{p.self, p.other}
	leaving := p.nameOf("s", two, p.other)
	p.server.put(probeSecret(leaving))
	p.apply(p.view(p.self))
	p.startInformer()
	w := <-p.server.watches
	last := p.server.put(probeSecret(p.nameOf("s", two, p.self)))
	w.Add(last)
	require.Eventually(t, func() bool { return p.inf.GetIndexer().LastStoreSyncResourceVersion() == last.ResourceVersion }, probeWait, probePoll)

	p.apply(p.view(two...))
	require.Eventually(t, func() bool { return !slices.Contains(p.stored(), "app/"+leaving) }, probeWait, probePoll)
	assert.Equal(t, last.ResourceVersion, p.inf.GetIndexer().LastStoreSyncResourceVersion())
}

// TestMembershipSyncedOnceCachesHoldKeys: a replica with sharded caches
// reports synced (and so ready) only once the relist of its first view is
// in its caches, when it owns its keys.
func TestMembershipSyncedOnceCachesHoldKeys(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	_, err := client.CoreV1().ConfigMaps("app").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "cm"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	m, err := New(Config{Client: client, Namespace: "ops", Group: "g", Identity: "a",
		LeaseDuration: 10 * time.Second, RenewDeadline: 8 * time.Second, RetryPeriod: 500 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(client, 0)
	maps := client.CoreV1().ConfigMaps("")
	hold := make(chan struct{})
	var mu sync.Mutex
	lists := 0
	list := func(ctx context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error) {
		mu.Lock()
		lists++
		first := lists == 1
		mu.Unlock()
		if !first {
			select {
			case <-hold:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return maps.List(ctx, opts)
	}
	require.NoError(t, Informer[*corev1.ConfigMap](m, factory.InformerFor, list, maps.Watch, ByName))
	gate := NewGate(m, Keys[string]{String: func(k string) string { return k }, List: func() []string { return []string{"app/cm"} }})
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		<-done
		factory.Shutdown()
	})

	require.Eventually(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		return m.core.synced && lists > 1
	}, probeWait, probePoll, "the replica publishes its first view and relists")
	assert.False(t, gate.Owns("app/cm"), "owned before the relist")
	assert.False(t, m.HasSynced(), "synced while it owns no key")
	close(hold)
	require.Eventually(t, func() bool { return m.HasSynced() && gate.Owns("app/cm") }, probeWait, probePoll)
}

// TestDropWaitsForQueuedEvent: an object whose key the replica stops
// wanting while the event that brought it is still on its way to the
// store leaves the store once the store has taken that event (dropped
// before, the event would bring it back for good).
func TestDropWaitsForQueuedEvent(t *testing.T) {
	p := newProbe(t, ByName)
	p.server.unbuffered = true // a send returns once the informer's watch took the event
	two := []string{p.self, p.other}
	kept, leaving := p.nameOf("s", two, p.self), p.nameOf("s", two, p.other)
	after := p.nameOf("s", two, p.self, kept)
	p.apply(p.view(p.self))
	p.startInformer()
	w := <-p.server.watches

	p.atIndex.set(kept)
	w.Add(p.server.put(probeSecret(kept)))
	<-p.atIndex.entered
	w.Add(p.server.put(probeSecret(leaving)))
	w.Add(p.server.put(probeSecret(after))) // taken once leaving was passed
	p.apply(p.view(two...))                 // drops leaving, whose add is queued
	close(p.atIndex.release)
	want := []string{"app/" + kept, "app/" + after}
	slices.Sort(want)
	require.Eventually(t, func() bool { return slices.Equal(want, p.stored()) }, probeWait, probePoll)
}

// TestInformerWithCopyingTransform: a transform that returns copies of
// the objects (the factory's, here) keeps neither a gained key from being
// owned nor the objects of a key that moved away from leaving.
func TestInformerWithCopyingTransform(t *testing.T) {
	p := newProbe(t, ByName)
	p.copying.Store(true)
	two := []string{p.self, p.other}
	mine, gained := p.nameOf("s", two, p.self), p.nameOf("s", two, p.other)
	p.server.put(probeSecret(mine))
	p.server.put(probeSecret(gained))
	p.apply(p.view(two...))
	p.startInformer()
	require.Equal(t, []string{"app/" + mine}, p.stored())

	p.apply(p.view(p.self))
	require.Eventually(t, func() bool { return p.gate.Owns("app/" + gained) }, probeWait, probePoll)
	assert.Contains(t, p.stored(), "app/"+gained)
	p.apply(p.view(two...))
	require.Eventually(t, func() bool { return slices.Equal([]string{"app/" + mine}, p.stored()) }, probeWait, probePoll)
}
