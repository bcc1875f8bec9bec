package reconciletest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/ctrlkit/ctrlkit/informer"
)

// FakeClientset is what client-go's and code-generator's fake clientsets
// have in common: pass the clientset itself (a *fake.Clientset).
type FakeClientset interface {
	Tracker() k8stesting.ObjectTracker
	PrependReactor(verb, resource string, reaction k8stesting.ReactionFunc)
	PrependWatchReactor(resource string, reaction k8stesting.WatchReactionFunc)
}

// resourceVersionBase is the first resourceVersion Strict assigns. It
// keeps its versions apart from the small numbers the fake tracker uses
// for lists.
const resourceVersionBase = 1000

// StrictAPI is a set of fake clientsets made to behave like one API server
// where a controller can tell; Strict makes one. Its methods are safe for
// concurrent use.
//
// Like an API server, across all its clientsets (one lock, one counter):
//
//   - resourceVersions: every write that changes an object stamps it with a
//     new resourceVersion from one counter, so versions increase across
//     all the resources, and watch events and informer caches carry them.
//     An update or patch that carries a resourceVersion other than the
//     stored object's fails with 409 Conflict. An update without one is
//     unconditional where the kind's API server strategy allows it (most
//     built-in kinds, such as ConfigMaps, Secrets, Services, Pods and the
//     workloads), and fails with 422 Invalid where it does not: custom
//     resources, Leases, PodDisruptionBudgets, webhook configurations and
//     the other kinds strict.go's strategies table names. A patch needs
//     none. A create that carries one fails with 400 Bad Request. A write
//     that changes nothing is not stored: the resourceVersion stays and
//     watchers see no event.
//   - UIDs and creationTimestamp: a create gets a fresh metadata.uid (any
//     uid in the request is ignored) and a creationTimestamp (whole
//     seconds); deletionTimestamp and deletionGracePeriodSeconds in a
//     create are dropped; generateName makes a name. Updates and patches
//     keep the stored uid and creationTimestamp: an update whose uid differs
//     fails with 409 Conflict, a patch that changes it with 422 Invalid.
//   - metadata.generation, kept as each kind's API server strategy keeps
//     it: for custom resources, Pods, the workloads (Deployments,
//     ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs,
//     ReplicationControllers), HorizontalPodAutoscalers,
//     PodDisruptionBudgets, Ingresses, NetworkPolicies, EndpointSlices and
//     most other kinds strict.go's strategies table names, 1 on create;
//     an update or patch of the main resource that changes anything
//     outside metadata and status adds 1 (for a Deployment, a change of
//     its annotations too; for an EndpointSlice, of its labels); writes of
//     the status subresource and changes of metadata alone do not. Other
//     built-in kinds (ConfigMaps, Secrets, Services, Leases, Namespaces,
//     Nodes, ...) keep none: a create keeps the generation it carries
//     (usually none), and no write changes it. Setting deletionTimestamp
//     adds 1 to a generation above 0. An update or patch cannot set the
//     generation.
//   - the status subresource, for objects with a status field: a create
//     drops the status; an update or patch of the main resource keeps the
//     stored status whatever the request says. An update or patch of
//     subresource "status" of a custom resource changes only the status;
//     of a built-in kind it keeps the stored spec (and a Deployment's
//     labels, a Pod's ownerReferences) but changes other metadata.
//   - finalizers and deletionTimestamp: deleting an object with finalizers
//     sets deletionTimestamp and deletionGracePeriodSeconds 0 and keeps it
//     (watchers see MODIFIED); deleting it again changes nothing; a write
//     that leaves it without finalizers removes it (watchers see DELETED,
//     the writer gets the object it wrote). Adding a finalizer to an object
//     being deleted fails with 422 Invalid; an update cannot clear
//     deletionTimestamp (the stored one is kept) or set it (422 Invalid).
//     DeleteOptions.Preconditions (UID, ResourceVersion) that do not match
//     fail with 409 Conflict.
//   - garbage collection: when an object is removed, each object of the
//     clientsets (in its namespace, or in any for a cluster-scoped owner)
//     whose ownerReferences name its uid is deleted in turn, honouring its
//     own finalizers, when none of its other owners exists; otherwise the
//     references to absent owners are dropped. DeleteOptions.PropagationPolicy
//     Orphan leaves the dependents, dropping their reference, behind the
//     "orphan" finalizer as the garbage collector does; Foreground keeps the
//     owner, with the "foregroundDeletion" finalizer, until its dependents
//     that block owner deletion are gone.
//   - a create or update of an object marked informer.TrimmedAnnotation (a
//     copy of an object an informer trimmed with informer.Trim) fails with
//     422 Invalid: sent to an API server, it would erase what the cache did
//     not keep, so a test fails where the code under test sends one.
//   - patches that do not apply: a JSON patch whose test fails or whose
//     path does not exist fails with 422 Invalid, a patch that is not one
//     with 400 Bad Request.
//   - lists and watches: a list carries a resourceVersion from the same
//     counter, and a watch from the resourceVersion of one of the last 32
//     lists of its resource and namespace first sends what changed since
//     that list, removals included (DELETED with the listed object), so an
//     informer misses nothing written between its list and its watch (if
//     the clientset's tracker hands out client-go's fake watchers, as
//     every generated fake's does; others get no replay). A watch from
//     another resourceVersion is served as client-go's fake serves it.
//   - resources: a custom resource is served under its own plural, also
//     one other than the plural client-go's fake clientsets guess from its
//     kind, which their tracker and REST mapper know (see WithKind).
//
// Unlike an API server:
//
//   - no admission, validation, defaulting, conversion, field selectors,
//     quotas, name or namespace checks: an invalid object is stored as sent;
//   - fields are managed as client-go's fake tracker manages them
//     (NewClientset: server-side apply through its field manager, with a
//     status apply's fields recorded under the status subresource, as the
//     API server records them, unless the same manager also applies the
//     main resource; NewSimpleClientset: apply as a strategic merge
//     patch). An apply is
//     stored by that tracker first and then made to follow the rules above,
//     so watchers may see two events for it, and an apply that breaks a
//     rule is undone by a third;
//   - garbage collection happens at once, within the delete or write that
//     removed the owner, and only for kinds the clientsets served a request
//     for since Strict (informers list every kind they watch; objects given
//     to a constructor count once their kind was requested). Owners of
//     unknown kinds count as present. A dependent whose owner never existed
//     is not collected;
//   - no graceful deletion: a Pod is removed at once, as an unscheduled
//     Pod is; no namespace finalization; no dry run (dry-run writes are
//     carried out, as by client-go's fake); DeleteCollection is not
//     handled (as in client-go's fake), nor the deprecated
//     DeleteOptions.OrphanDependents;
//   - an update of an object that does not exist fails with 404 Not
//     Found, also for the kinds whose API server creates it (Leases,
//     Services, Endpoints, Events, LimitRanges, RuntimeClasses, the RBAC
//     kinds);
//   - error messages are the fake's own (reasons and causes are the API
//     server's);
//   - the scale subresource of Deployments, ReplicaSets, StatefulSets and
//     ReplicationControllers is served for get and update as the API
//     server serves it (an autoscaling/v1 Scale; an update sets
//     spec.replicas); other subresources than status and scale, and
//     patches of scale or the scale of custom resources, are handled as
//     client-go's fake handles them, with resourceVersions checked and
//     stamped but no other rule;
//   - an Unstructured object is treated as a custom resource, even of a
//     built-in kind; the Go types of k8s.io/api as built-in kinds, with the
//     strategy of kube-apiserver v1.37 for each resource, whatever its
//     version; a Pod or Namespace created gets no status from the server;
//   - the DELETED event of a removed object carries its last stored
//     resourceVersion, not a new one (the removal uses up a version of the
//     counter all the same); the fake's watch channels hold 100
//     events, so a long cascade needs a watcher that reads.
//
// Objects given to a clientset's constructor (and to Tracker's Add) that
// carry no resourceVersion get one from the counter, as every object an
// API server stores has one, by the time a request sees them: the first
// request for their resource stamps all of them at once, before its first
// watch starts, so no watcher sees a stamp as a change (but one a test
// starts on cs.Tracker() itself, which bypasses these rules). Reading one
// and updating it then works as for a created object. One given a
// resourceVersion keeps it until it is first written. They keep the uid,
// creationTimestamp and generation they were given (none, if none): give
// them a uid if their dependents must be collected.
type StrictAPI struct {
	mu       sync.Mutex
	clock    clock.PassiveClock
	version  int64 // the last resourceVersion handed out
	trackers []*strictTracker
	byFake   map[FakeClientset]*strictTracker
}

// listed is what a list returned, kept for the watch that follows it.
type listed struct {
	resourceVersion string
	kind            schema.GroupVersionKind
	objects         map[types.NamespacedName]runtime.Object
}

// listScope is the resource and namespace of a list or watch.
type listScope struct {
	gvr schema.GroupVersionResource
	ns  string
}

// Strict makes the given fake clientsets behave like one API server, as
// StrictAPI describes, by prepending a reactor for every verb and resource
// to each. Call it once per clientset, before the clientsets are used.
// Reactors prepended later run before it: a test's reactor that writes
// must write through Tracker, not through a clientset.
func Strict(clientsets ...FakeClientset) *StrictAPI {
	api := &StrictAPI{clock: clock.RealClock{}, version: resourceVersionBase, byFake: make(map[FakeClientset]*strictTracker, len(clientsets))}
	for _, cs := range clientsets {
		res := &fakeResources{ObjectTracker: cs.Tracker(), kinds: make(map[schema.GroupVersionResource]string)}
		t := &strictTracker{api: api, base: res, res: res, kinds: make(map[schema.GroupVersionResource]string), lists: make(map[listScope][]listed), stamped: make(map[schema.GroupVersionResource]bool)}
		api.trackers = append(api.trackers, t)
		api.byFake[cs] = t
		cs.PrependReactor("*", "*", t.react)
		cs.PrependWatchReactor("*", t.reactWatch)
	}
	return api
}

// WithKind tells the API that the objects of the resource gvr are of
// kind before a request does, and returns a. Strict keeps the objects of
// a custom resource whose plural is not the one client-go's fake
// clientsets guess from its kind (Gizmo: gizmoes, guessed gizmos; Quiz:
// quizzes, guessed quizs; Data: data, guessed datas) under the guessed
// resource, where the fake keeps those given to its constructor and its
// REST mapper finds their kind, so that the generated client's requests
// work as for any other kind. It learns the kind from the first create, update, apply or list
// of gvr, or an object read: WithKind is needed only when a test's
// first request for such a resource is a get, patch or delete of objects
// given to the clientset's constructor, or a watch (an informer lists
// first). Call it before the clientsets are used.
func (a *StrictAPI) WithKind(gvr schema.GroupVersionResource, kind string) *StrictAPI {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.trackers {
		t.res.learn(gvr, kind)
	}
	return a
}

// WithClock makes the API stamp creationTimestamp and deletionTimestamp
// (to the second, as the API server's encoding keeps them) from clk instead
// of the real clock, and returns a. Give it the fake clock the controller
// under test waits by (queue.WithClock) and its condition.Writer stamps
// by, so that a test moving that clock sees the ages of objects, the
// times of conditions and the delays of keys move together. Call it, as
// in Strict(kube).WithClock(clk), before the clientsets are used.
func (a *StrictAPI) WithClock(clk clock.PassiveClock) *StrictAPI {
	if clk == nil {
		panic("reconciletest: StrictAPI.WithClock of a nil clock")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clock = clk
	return a
}

// now is the time of the API's clock as the API server encodes it. The
// caller holds a.mu.
func (a *StrictAPI) now() metav1.Time {
	return metav1.NewTime(a.clock.Now()).Rfc3339Copy()
}

// Tracker returns an ObjectTracker over cs's objects that applies every
// rule of the StrictAPI: what a test's reactor writes through (the fake
// clientset holds its lock while reactors run, so a reactor cannot call
// the clientset). Create, Update, Patch, Apply and Delete act as the
// corresponding requests for the main resource (Update and Patch keep the
// stored status; Patch takes the patched object); Get, List and Watch read
// cs's tracker; Add stores an object as a clientset's constructor does,
// with a resourceVersion from the counter if it carries none. It is safe
// for concurrent use. Tracker panics if cs was not given to Strict.
func (a *StrictAPI) Tracker(cs FakeClientset) k8stesting.ObjectTracker {
	t, ok := a.byFake[cs]
	if !ok {
		panic("reconciletest: StrictAPI.Tracker of a clientset not given to Strict")
	}
	return lockedTracker{t}
}

// strictTracker applies the rules to one clientset's tracker. Its methods
// expect the caller to hold api.mu.
type strictTracker struct {
	api *StrictAPI
	// base is the fake's tracker, through res: objects of a kind whose
	// plural is not the one the fake guesses are kept under the guessed.
	base k8stesting.ObjectTracker
	res  *fakeResources
	// kinds are the resources requests were served for, with their kinds.
	kinds map[schema.GroupVersionResource]string
	// lists holds the latest lists of each resource and namespace, at
	// most keptLists, oldest first.
	lists map[listScope][]listed
	// stamped are the resources whose objects given to the clientset's
	// constructor all carry a resourceVersion (see stampSeeded).
	stamped map[schema.GroupVersionResource]bool
}

// keptLists bounds the lists of a resource and namespace kept for the
// watches that follow them: one for each informer that lists it.
const keptLists = 32

// react is the reactor Strict prepends.
func (t *strictTracker) react(action k8stesting.Action) (bool, runtime.Object, error) {
	t.api.mu.Lock()
	defer t.api.mu.Unlock()
	gvr, ns, sub := action.GetResource(), action.GetNamespace(), action.GetSubresource()
	if err := refuseTrimmed(action); err != nil {
		return true, nil, err
	}
	t.res.learn(gvr, actionKind(action))
	if u, ok := action.(k8stesting.UpdateActionImpl); ok && (sub == "" || sub == "status") {
		// Other subresources take bodies of other kinds (scale: an
		// autoscaling/v1 Scale), which say nothing of the resource's.
		t.res.learn(gvr, kindOf(u.GetObject()))
	}
	if err := t.stampSeeded(gvr, ns, actionName(action), actionKind(action)); err != nil {
		return true, nil, err
	}
	switch a := action.(type) {
	case k8stesting.CreateActionImpl:
		if sub == "" {
			obj, err := t.create(gvr, a.GetObject(), ns, a.CreateOptions)
			return true, obj, err
		}
		return t.viaObjectReaction(action)
	case k8stesting.UpdateActionImpl:
		if sub == "scale" {
			if served, obj, err := t.updateScale(gvr, ns, a.GetObject(), a.UpdateOptions.FieldManager); served {
				return true, obj, err
			}
		}
		obj, err := t.update(false, gvr, a.GetObject(), ns, sub, a.UpdateOptions.FieldManager)
		return true, obj, err
	case k8stesting.PatchActionImpl:
		return t.viaObjectReaction(action)
	case k8stesting.DeleteActionImpl:
		return true, nil, t.delete(gvr, ns, a.GetName(), a.DeleteOptions)
	case k8stesting.GetActionImpl:
		if sub == "scale" {
			return t.getScale(gvr, ns, a.GetName())
		}
		if sub != "" {
			return false, nil, nil
		}
		obj, err := t.base.Get(gvr, ns, a.GetName(), a.GetOptions)
		if err == nil {
			t.remember(gvr, obj)
		}
		return true, obj, err
	case k8stesting.ListActionImpl:
		if sub != "" {
			return false, nil, nil
		}
		if a.GetKind().Kind != "" {
			t.kinds[gvr] = a.GetKind().Kind
		}
		list, err := t.base.List(gvr, a.GetKind(), ns, a.ListOptions)
		if err != nil {
			return true, nil, err
		}
		return true, list, t.keepList(listScope{gvr, ns}, a.GetKind(), list)
	}
	return false, nil, nil
}

// actionName is the name of the object action is for, when it names one.
func actionName(action k8stesting.Action) string {
	switch a := action.(type) {
	case k8stesting.GetActionImpl:
		return a.GetName()
	case k8stesting.DeleteActionImpl:
		return a.GetName()
	case k8stesting.PatchActionImpl:
		return a.GetName()
	case k8stesting.CreateActionImpl:
		if a.GetSubresource() != "" {
			return a.Name
		}
	case k8stesting.UpdateActionImpl:
		if m, err := meta.Accessor(a.GetObject()); err == nil {
			return m.GetName()
		}
	}
	return ""
}

// actionKind is the kind of the objects of action's resource, when the
// action tells it.
func actionKind(action k8stesting.Action) string {
	switch a := action.(type) {
	case k8stesting.ListActionImpl:
		return a.GetKind().Kind
	case k8stesting.CreateActionImpl:
		if a.GetSubresource() == "" {
			return kindOf(a.GetObject())
		}
	case k8stesting.PatchActionImpl:
		if a.GetPatchType() == types.ApplyPatchType {
			return appliedKind(a.GetResource(), a.GetPatch())
		}
	}
	return ""
}

// appliedKind is the kind an apply's body (YAML or JSON) names, if its
// apiVersion is gvr's; else "" (the apply then fails as the fake fails
// it).
func appliedKind(gvr schema.GroupVersionResource, body []byte) string {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(body, &tm); err != nil {
		return ""
	}
	if gv, err := schema.ParseGroupVersion(tm.APIVersion); err != nil || gv != gvr.GroupVersion() {
		return ""
	}
	return tm.Kind
}

// stampSeeded gives every object of gvr stored without a resourceVersion
// (the objects given to the clientset's constructor) one from the
// counter, the first time a request for gvr tells the kind of its
// objects: by kind, or by the stored object named name in namespace ns.
// No watcher sees the stamps as changes: stampBeforeWatch runs before
// each watch, and leaves gvr unstamped only for a watch of a namespace
// that holds none of these objects. Objects whose kind cannot be listed
// are left as they are.
func (t *strictTracker) stampSeeded(gvr schema.GroupVersionResource, ns, name, kind string) error {
	if t.stamped[gvr] {
		return nil
	}
	if kind == "" && name != "" {
		if obj, err := t.base.Get(gvr, ns, name); err == nil {
			kind = kindOf(obj)
		}
	}
	if kind == "" {
		return nil
	}
	list, err := t.base.List(gvr, gvr.GroupVersion().WithKind(kind), metav1.NamespaceAll)
	if err != nil {
		return nil // not a kind the tracker lists: the request meets that itself
	}
	objects, err := byName(list)
	if err != nil {
		return err
	}
	for _, key := range slices.SortedFunc(maps.Keys(objects), compareNames) {
		obj := objects[key]
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		if m.GetResourceVersion() != "" {
			continue
		}
		t.stamp(m)
		if err := t.base.Update(gvr, obj, key.Namespace); err != nil {
			return err
		}
	}
	t.stamped[gvr] = true
	return nil
}

// stampBeforeWatch runs stampSeeded before the first watch of scope's
// resource. When no request told the kind of its objects yet, a probe
// watch on the fake's tracker, stopped at once, replays the objects of
// the scope and tells it (the fake's own watch of the scope replays the
// same objects). When the scope holds none, a watch of one namespace
// cannot see the objects of the others stamped later, and a watch of all
// namespaces has none to see.
func (t *strictTracker) stampBeforeWatch(scope listScope) error {
	if t.stamped[scope.gvr] {
		return nil
	}
	if kind := t.kinds[scope.gvr]; kind != "" {
		return t.stampSeeded(scope.gvr, "", "", kind)
	}
	probe, err := t.base.Watch(scope.gvr, scope.ns, metav1.ListOptions{})
	if err != nil {
		return err
	}
	defer probe.Stop()
	kind := ""
replay: // sent before the watch is returned
	for kind == "" {
		select {
		case ev := <-probe.ResultChan():
			if ev.Object != nil {
				kind = kindOf(ev.Object)
			}
		default:
			break replay
		}
	}
	if kind == "" {
		if scope.ns == metav1.NamespaceAll {
			t.stamped[scope.gvr] = true
		}
		return nil
	}
	return t.stampSeeded(scope.gvr, "", "", kind)
}

// keepList stamps list with the current resourceVersion and keeps a copy
// of its objects for a watch from that version.
func (t *strictTracker) keepList(scope listScope, kind schema.GroupVersionKind, list runtime.Object) error {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return err
	}
	objects, err := byName(list)
	if err != nil {
		return err
	}
	for key, obj := range objects {
		objects[key] = obj.DeepCopyObject()
	}
	kept := listed{resourceVersion: strconv.FormatInt(t.api.version, 10), kind: kind, objects: objects}
	lm.SetResourceVersion(kept.resourceVersion)
	lists := t.lists[scope]
	if len(lists) == keptLists {
		lists = slices.Delete(lists, 0, 1)
	}
	t.lists[scope] = append(lists, kept)
	return nil
}

// byName keys the items of list by namespace and name.
func byName(list runtime.Object) (map[types.NamespacedName]runtime.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	objects := make(map[types.NamespacedName]runtime.Object, len(items))
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil {
			return nil, err
		}
		objects[types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}] = item
	}
	return objects, nil
}

// fakeWatcher is the watcher client-go's fake tracker hands out.
type fakeWatcher interface {
	watch.Interface
	Add(runtime.Object)
	Modify(runtime.Object)
	Delete(runtime.Object)
}

// reactWatch is the watch reactor Strict prepends. A watch from the
// resourceVersion of a kept list of its scope gets, before anything
// written later, what changed since that list; client-go's fake tracker
// would replay the objects added or changed since, but not the removed
// ones. Other watches are left to the fake's own watch reactor.
func (t *strictTracker) reactWatch(action k8stesting.Action) (bool, watch.Interface, error) {
	t.api.mu.Lock()
	defer t.api.mu.Unlock()
	w, ok := action.(k8stesting.WatchActionImpl)
	scope := listScope{action.GetResource(), action.GetNamespace()}
	if err := t.stampBeforeWatch(scope); err != nil {
		return true, nil, err
	}
	lists := t.lists[scope]
	i := slices.IndexFunc(lists, func(l listed) bool { return ok && l.resourceVersion == w.ListOptions.ResourceVersion })
	if i < 0 {
		if t.res.stored(scope.gvr) != scope.gvr {
			// The fake's own watch reactor would watch the request's
			// resource, under which the fake keeps none of these objects.
			var opts []metav1.ListOptions
			if ok {
				opts = append(opts, w.ListOptions)
			}
			watcher, err := t.base.Watch(scope.gvr, scope.ns, opts...)
			return true, watcher, err
		}
		return false, nil, nil
	}
	since := lists[i]
	watcher, err := t.base.Watch(scope.gvr, scope.ns) // without options the tracker replays nothing
	if err != nil {
		return true, nil, err
	}
	fw, ok := watcher.(fakeWatcher)
	if !ok {
		return true, watcher, nil // nothing can be sent to it
	}
	list, err := t.base.List(scope.gvr, since.kind, scope.ns)
	if err != nil {
		watcher.Stop()
		return true, nil, err
	}
	now, err := byName(list)
	if err != nil {
		watcher.Stop()
		return true, nil, err
	}
	for _, key := range slices.SortedFunc(maps.Keys(now), compareNames) {
		obj, before := now[key], since.objects[key]
		switch {
		case before == nil:
			fw.Add(obj)
		case uidOf(before) != uidOf(obj):
			fw.Delete(before.DeepCopyObject())
			fw.Add(obj)
		case resourceVersionOf(before) != resourceVersionOf(obj):
			fw.Modify(obj)
		}
	}
	for _, key := range slices.SortedFunc(maps.Keys(since.objects), compareNames) {
		if _, ok := now[key]; !ok {
			fw.Delete(since.objects[key].DeepCopyObject())
		}
	}
	return true, watcher, nil
}

// compareNames orders names by namespace, then name.
func compareNames(a, b types.NamespacedName) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// uidOf is obj's UID, or none.
func uidOf(obj runtime.Object) types.UID {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetUID()
	}
	return ""
}

// resourceVersionOf is obj's resourceVersion, or none.
func resourceVersionOf(obj runtime.Object) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetResourceVersion()
	}
	return ""
}

// refuseTrimmed fails a create or update of an object marked
// informer.TrimmedAnnotation: a copy of a trimmed cached object sent whole
// would erase on a real API server what its informer did not keep.
func refuseTrimmed(action k8stesting.Action) error {
	var obj runtime.Object
	switch a := action.(type) {
	case k8stesting.CreateActionImpl:
		obj = a.GetObject()
	case k8stesting.UpdateActionImpl:
		obj = a.GetObject()
	default:
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil || !informer.Trimmed(m) {
		return nil
	}
	gr := action.GetResource().GroupResource()
	return apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: gr.Resource}, m.GetName(), field.ErrorList{
		field.Forbidden(field.NewPath("metadata", "annotations").Key(informer.TrimmedAnnotation),
			"a copy of an object its informer trimmed was sent whole: it would erase what the cache did not keep (write it with a patch or server-side apply)"),
	})
}

// viaObjectReaction lets client-go's ObjectReaction work out patches and
// subresource creates, and the rules store the result.
func (t *strictTracker) viaObjectReaction(action k8stesting.Action) (bool, runtime.Object, error) {
	at := &actionTracker{ObjectTracker: t.base, t: t, sub: action.GetSubresource()}
	handled, obj, err := k8stesting.ObjectReaction(at)(action)
	if err == nil && at.result != nil {
		obj = at.result
	}
	if p, ok := action.(k8stesting.PatchActionImpl); ok && err != nil {
		err = patchError(p, err)
	}
	return handled, obj, err
}

// patchError answers a patch that could not be applied as the API server
// does: a JSON patch that is no list of operations with 400 Bad Request,
// one that fails (a test that does not hold, a path that does not exist)
// with 422 Invalid, other patches that do not apply with 400. Errors of
// the rules are returned as they are.
func patchError(action k8stesting.PatchActionImpl, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	if action.GetPatchType() == types.JSONPatchType {
		var ops []map[string]any
		if json.Unmarshal(action.GetPatch(), &ops) == nil {
			return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
	}
	return apierrors.NewBadRequest(err.Error())
}

// actionTracker is what ObjectReaction sees for one action: writes go
// through the rules with the action's subresource, and the object they
// stored (or removed) is the action's result.
type actionTracker struct {
	k8stesting.ObjectTracker
	t      *strictTracker
	sub    string
	result runtime.Object
}

func (a *actionTracker) Get(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.GetOptions) (runtime.Object, error) {
	if a.result != nil {
		return a.result.DeepCopyObject(), nil
	}
	obj, err := a.ObjectTracker.Get(gvr, ns, name, opts...)
	if err == nil && a.sub == "" {
		a.t.remember(gvr, obj)
	}
	return obj, err
}

func (a *actionTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	var err error
	a.result, err = a.t.update(false, gvr, obj, ns, a.sub, first(opts).FieldManager)
	return err
}

func (a *actionTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	var err error
	a.result, err = a.t.update(true, gvr, obj, ns, a.sub, first(opts).FieldManager)
	return err
}

func (a *actionTracker) Apply(gvr schema.GroupVersionResource, cfg runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	var err error
	a.result, err = a.t.apply(gvr, cfg, ns, a.sub, first(opts))
	return err
}

// lockedTracker is the ObjectTracker Tracker returns.
type lockedTracker struct{ t *strictTracker }

func (l lockedTracker) lock() func() {
	l.t.api.mu.Lock()
	return l.t.api.mu.Unlock
}

func (l lockedTracker) Add(obj runtime.Object) error {
	defer l.lock()()
	if m, err := meta.Accessor(obj); err == nil && m.GetResourceVersion() == "" {
		obj = obj.DeepCopyObject()
		m, _ = meta.Accessor(obj)
		l.t.stamp(m)
	}
	return l.t.base.Add(obj)
}

func (l lockedTracker) Get(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.GetOptions) (runtime.Object, error) {
	defer l.lock()()
	if err := l.t.stampSeeded(gvr, ns, name, ""); err != nil {
		return nil, err
	}
	obj, err := l.t.base.Get(gvr, ns, name, opts...)
	if err == nil {
		l.t.remember(gvr, obj)
	}
	return obj, err
}

func (l lockedTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	defer l.lock()()
	l.t.res.learn(gvr, kindOf(obj))
	if err := l.t.stampSeeded(gvr, ns, "", kindOf(obj)); err != nil {
		return err
	}
	_, err := l.t.create(gvr, obj, ns, first(opts))
	return err
}

func (l lockedTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	defer l.lock()()
	l.t.res.learn(gvr, kindOf(obj))
	if err := l.t.stampSeeded(gvr, ns, "", kindOf(obj)); err != nil {
		return err
	}
	_, err := l.t.update(false, gvr, obj, ns, "", first(opts).FieldManager)
	return err
}

func (l lockedTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	defer l.lock()()
	l.t.res.learn(gvr, kindOf(obj))
	if err := l.t.stampSeeded(gvr, ns, "", kindOf(obj)); err != nil {
		return err
	}
	_, err := l.t.update(true, gvr, obj, ns, "", first(opts).FieldManager)
	return err
}

func (l lockedTracker) Apply(gvr schema.GroupVersionResource, cfg runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	defer l.lock()()
	l.t.res.learn(gvr, kindOf(cfg))
	if err := l.t.stampSeeded(gvr, ns, "", kindOf(cfg)); err != nil {
		return err
	}
	_, err := l.t.apply(gvr, cfg, ns, "", first(opts))
	return err
}

func (l lockedTracker) List(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, ns string, opts ...metav1.ListOptions) (runtime.Object, error) {
	defer l.lock()()
	if gvk.Kind != "" {
		l.t.kinds[gvr] = gvk.Kind
	}
	l.t.res.learn(gvr, gvk.Kind)
	if err := l.t.stampSeeded(gvr, ns, "", gvk.Kind); err != nil {
		return nil, err
	}
	return l.t.base.List(gvr, gvk, ns, opts...)
}

func (l lockedTracker) Delete(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.DeleteOptions) error {
	defer l.lock()()
	if err := l.t.stampSeeded(gvr, ns, name, ""); err != nil {
		return err
	}
	return l.t.delete(gvr, ns, name, first(opts))
}

func (l lockedTracker) Watch(gvr schema.GroupVersionResource, ns string, opts ...metav1.ListOptions) (watch.Interface, error) {
	defer l.lock()()
	if err := l.t.stampBeforeWatch(listScope{gvr, ns}); err != nil {
		return nil, err
	}
	return l.t.base.Watch(gvr, ns, opts...)
}

// first returns the first of opts, or the zero value.
func first[T any](opts []T) T {
	var zero T
	if len(opts) > 0 {
		return opts[0]
	}
	return zero
}

// remember notes the kind of obj, served for gvr, for garbage collection.
func (t *strictTracker) remember(gvr schema.GroupVersionResource, obj runtime.Object) {
	if kind := kindOf(obj); kind != "" {
		t.kinds[gvr] = kind
		t.res.learn(gvr, kind)
	}
}

// fakeResources is a fake clientset's tracker that keeps the objects of
// each resource under the resource client-go's fake clientsets guess from
// their kind (meta.UnsafeGuessKindToResource: the kind in lower case, with
// "s", "es" or "ies"), where the resource of a request is not that
// guess: a custom resource whose plural is not the guessed one (Gizmo:
// gizmoes, guessed gizmos; Quiz: quizzes; Data: data) is served
// as the fake serves the kinds it guesses right, whose objects given to a
// constructor it keeps under the guessed resource too. It learns the kind
// of a resource's objects from the requests for it (see learn).
type fakeResources struct {
	k8stesting.ObjectTracker
	kinds map[schema.GroupVersionResource]string
}

// learn notes that the objects of gvr are of kind, unless kind is empty.
func (f *fakeResources) learn(gvr schema.GroupVersionResource, kind string) {
	if kind != "" {
		f.kinds[gvr] = kind
	}
}

// stored is the resource the objects of gvr are kept under: gvr itself
// when their kind is unknown or gvr is the guessed plural, else the
// guessed plural, also when gvr is the kind in lower case (an uncountable
// kind's plural, such as Data's data): the fake's REST mapper knows that
// as the singular, but keeps the objects given to its constructor under
// the guessed plural (datas).
func (f *fakeResources) stored(gvr schema.GroupVersionResource) schema.GroupVersionResource {
	kind := f.kinds[gvr]
	if kind == "" {
		return gvr
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvr.GroupVersion().WithKind(kind))
	return plural
}

func (f *fakeResources) Get(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.GetOptions) (runtime.Object, error) {
	return f.ObjectTracker.Get(f.stored(gvr), ns, name, opts...)
}

func (f *fakeResources) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	return f.ObjectTracker.Create(f.stored(gvr), obj, ns, opts...)
}

func (f *fakeResources) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	return f.ObjectTracker.Update(f.stored(gvr), obj, ns, opts...)
}

func (f *fakeResources) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	return f.ObjectTracker.Patch(f.stored(gvr), obj, ns, opts...)
}

func (f *fakeResources) Apply(gvr schema.GroupVersionResource, cfg runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	return f.ObjectTracker.Apply(f.stored(gvr), cfg, ns, opts...)
}

func (f *fakeResources) List(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, ns string, opts ...metav1.ListOptions) (runtime.Object, error) {
	return f.ObjectTracker.List(f.stored(gvr), gvk, ns, opts...)
}

func (f *fakeResources) Delete(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.DeleteOptions) error {
	return f.ObjectTracker.Delete(f.stored(gvr), ns, name, opts...)
}

func (f *fakeResources) Watch(gvr schema.GroupVersionResource, ns string, opts ...metav1.ListOptions) (watch.Interface, error) {
	return f.ObjectTracker.Watch(f.stored(gvr), ns, opts...)
}

// kindOf is the kind of obj: its own, or the name of its Go type.
func kindOf(obj runtime.Object) string {
	if kind := obj.GetObjectKind().GroupVersionKind().Kind; kind != "" {
		return kind
	}
	if _, ok := obj.(runtime.Unstructured); ok {
		return ""
	}
	return reflect.TypeOf(obj).Elem().Name()
}

// stamp gives m the next resourceVersion.
func (t *strictTracker) stamp(m metav1.Object) {
	t.api.version++
	m.SetResourceVersion(strconv.FormatInt(t.api.version, 10))
}

// maxGeneratedNameAttempts bounds the names tried for one generateName.
const maxGeneratedNameAttempts = 8

// create stores a new object made from obj (which it leaves as it was)
// and returns what it stored.
func (t *strictTracker) create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts metav1.CreateOptions) (runtime.Object, error) {
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	t.remember(gvr, obj)
	if m.GetNamespace() == "" {
		m.SetNamespace(ns)
	}
	if err := t.prepareCreate(gvr, obj, m); err != nil {
		return nil, err
	}
	t.stamp(m)
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	for attempt := 0; ; attempt++ {
		if generated {
			m.SetName(generateName(m.GetGenerateName()))
		}
		err = t.base.Create(gvr, obj, ns, opts)
		if !generated || !apierrors.IsAlreadyExists(err) || attempt == maxGeneratedNameAttempts-1 {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return t.base.Get(gvr, ns, m.GetName())
}

// generateName appends five random characters to base, as an API server's
// name generator does.
func generateName(base string) string {
	const maxNameLength, randomLength = 63, 5
	if len(base) > maxNameLength-randomLength {
		base = base[:maxNameLength-randomLength]
	}
	return base + utilrand.String(randomLength)
}

// prepareCreate sets what the API server sets on a new object m of obj.
func (t *strictTracker) prepareCreate(gvr schema.GroupVersionResource, obj runtime.Object, m metav1.Object) error {
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(t.api.now())
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	content, err := contentOf(obj)
	if err != nil {
		return err
	}
	if _, ok := content["status"]; ok {
		clearPart(obj, "status")
	}
	if strategyOf(gvr, obj).startsGeneration {
		m.SetGeneration(1)
	}
	return nil
}

// update stores obj, the object of an update (or the patched object of a
// patch) of subresource sub, by the rules; it returns what it stored, the
// stored object when nothing changed, or obj as it would have been stored
// when the write removed the object.
func (t *strictTracker) update(patch bool, gvr schema.GroupVersionResource, obj runtime.Object, ns, sub, fieldManager string) (runtime.Object, error) {
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(ns)
	}
	stored, err := t.base.Get(gvr, ns, m.GetName())
	if err != nil {
		return nil, err
	}
	if sub == "" {
		t.remember(gvr, stored)
	}
	final, plain, err := t.prepareUpdate(patch, gvr, sub, stored, obj)
	if err != nil {
		return nil, err
	}
	if plain {
		fm, err := meta.Accessor(final)
		if err != nil {
			return nil, err
		}
		t.stamp(fm)
		if err := t.base.Update(gvr, final, ns, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			return nil, err
		}
		return t.base.Get(gvr, ns, fm.GetName())
	}
	return t.commit(gvr, ns, stored, final, fieldManager)
}

// statusKeeps names the metadata fields that a status write of a built-in
// resource cannot change, beyond those no write can change.
var statusKeeps = map[schema.GroupResource]string{
	{Group: "apps", Resource: "deployments"}: "labels",
	{Resource: "pods"}:                       "ownerReferences",
}

// staleVersion is the API server's Conflict for a write of the object
// name at resourceVersion rv where stored is at another, or nil where rv
// is empty (an unconditional write) or stored's.
func staleVersion(gvr schema.GroupVersionResource, name, rv string, stored metav1.Object) error {
	if rv == "" || rv == stored.GetResourceVersion() {
		return nil
	}
	return apierrors.NewConflict(gvr.GroupResource(), name,
		fmt.Errorf("the object has been modified: resourceVersion %s, stored %s; please apply your changes to the latest version and try again", rv, stored.GetResourceVersion()))
}

// prepareUpdate returns the object that a write of req to subresource sub
// stores over stored, or the error the API server answers. plain means
// only resourceVersions apply: a subresource other than status.
func (t *strictTracker) prepareUpdate(patch bool, gvr schema.GroupVersionResource, sub string, stored, req runtime.Object) (final runtime.Object, plain bool, err error) {
	sm, err := meta.Accessor(stored)
	if err != nil {
		return nil, false, err
	}
	rm, err := meta.Accessor(req)
	if err != nil {
		return nil, false, err
	}
	if err := staleVersion(gvr, rm.GetName(), rm.GetResourceVersion(), sm); err != nil {
		return nil, false, err
	}
	sameType := reflect.TypeOf(stored) == reflect.TypeOf(req)
	if (sub != "" && sub != "status") || !sameType {
		return req, true, nil
	}
	// The API server checks the uid precondition before the
	// resourceVersion.
	if uid := rm.GetUID(); !patch && uid != "" && uid != sm.GetUID() {
		return nil, false, apierrors.NewConflict(gvr.GroupResource(), rm.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, sm.GetUID()))
	}
	strat := strategyOf(gvr, req)
	if !patch && rm.GetResourceVersion() == "" && strat.conditional {
		return nil, false, apierrors.NewInvalid(schema.GroupKind{Group: gvr.Group, Kind: gvr.Resource}, rm.GetName(), field.ErrorList{
			field.Invalid(field.NewPath("metadata", "resourceVersion"), rm.GetResourceVersion(), "must be specified for an update"),
		})
	}
	content, err := contentOf(stored)
	if err != nil {
		return nil, false, err
	}
	_, hasStatus := content["status"]
	if !hasStatus {
		reqContent, err := contentOf(req)
		if err != nil {
			return nil, false, err
		}
		_, hasStatus = reqContent["status"]
	}
	final = req
	switch {
	case sub == "status" && !builtin(req):
		// Only the status changes.
		final = stored.DeepCopyObject()
		copyPart(final, req, "status")
	case sub == "status":
		copyPart(final, stored, "spec")
		switch statusKeeps[gvr.GroupResource()] {
		case "labels":
			rm.SetLabels(sm.GetLabels())
		case "ownerReferences":
			rm.SetOwnerReferences(sm.GetOwnerReferences())
		}
	case hasStatus:
		copyPart(final, stored, "status")
	}
	fm, err := meta.Accessor(final)
	if err != nil {
		return nil, false, err
	}
	fm.SetGeneration(sm.GetGeneration())
	if fm.GetUID() == "" {
		fm.SetUID(sm.GetUID())
	}
	if ct := sm.GetCreationTimestamp(); !ct.IsZero() {
		fm.SetCreationTimestamp(ct)
	}
	if sm.GetDeletionTimestamp() != nil {
		fm.SetDeletionTimestamp(sm.GetDeletionTimestamp())
	}
	if sm.GetDeletionGracePeriodSeconds() != nil && fm.GetDeletionGracePeriodSeconds() == nil {
		fm.SetDeletionGracePeriodSeconds(sm.GetDeletionGracePeriodSeconds())
	}
	path := field.NewPath("metadata")
	var errs field.ErrorList
	if sm.GetDeletionTimestamp() != nil {
		errs = append(errs, apivalidation.ValidateNoNewFinalizers(fm.GetFinalizers(), sm.GetFinalizers(), path.Child("finalizers"))...)
	}
	errs = append(errs, apivalidation.ValidateImmutableField(fm.GetUID(), sm.GetUID(), path.Child("uid"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(fm.GetDeletionTimestamp(), sm.GetDeletionTimestamp(), path.Child("deletionTimestamp"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(fm.GetDeletionGracePeriodSeconds(), sm.GetDeletionGracePeriodSeconds(), path.Child("deletionGracePeriodSeconds"))...)
	if len(errs) > 0 {
		return nil, false, apierrors.NewInvalid(schema.GroupKind{Group: gvr.Group, Kind: kindOf(stored)}, fm.GetName(), errs)
	}
	if sub == "" && strat.countsGeneration {
		changed, err := specChanged(strat.countsMeta, stored, final)
		if err != nil {
			return nil, false, err
		}
		if changed {
			fm.SetGeneration(sm.GetGeneration() + 1)
		}
	}
	return final, false, nil
}

// commit stores final over stored: not at all if nothing changed; by
// removing the object if final completes its deletion; else with a new
// resourceVersion. It returns what the writer gets back.
func (t *strictTracker) commit(gvr schema.GroupVersionResource, ns string, stored, final runtime.Object, fieldManager string) (runtime.Object, error) {
	sm, err := meta.Accessor(stored)
	if err != nil {
		return nil, err
	}
	fm, err := meta.Accessor(final)
	if err != nil {
		return nil, err
	}
	if sm.GetDeletionTimestamp() != nil && len(fm.GetFinalizers()) == 0 &&
		(sm.GetDeletionGracePeriodSeconds() == nil || *sm.GetDeletionGracePeriodSeconds() == 0) {
		return final, t.remove(gvr, ns, stored)
	}
	same, err := sameContent(stored, final)
	if err != nil {
		return nil, err
	}
	if same {
		return stored, nil
	}
	t.stamp(fm)
	if err := t.base.Update(gvr, final, ns, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return nil, err
	}
	return t.base.Get(gvr, ns, fm.GetName())
}

// apply stores a server-side apply of cfg: the fake tracker applies it,
// then the result is made to follow the rules (or the apply is undone).
func (t *strictTracker) apply(gvr schema.GroupVersionResource, cfg runtime.Object, ns, sub string, opts metav1.PatchOptions) (runtime.Object, error) {
	cm, err := meta.Accessor(cfg)
	if err != nil {
		return nil, err
	}
	name := cm.GetName()
	old, getErr := t.base.Get(gvr, ns, name)
	if getErr != nil && !apierrors.IsNotFound(getErr) {
		return nil, getErr
	}
	if getErr == nil && sub == "status" {
		// The fake's field manager knows no subresources: it must see the
		// manager's earlier status applies as its own to merge them.
		if err := t.relabelApplies(gvr, ns, name, opts.FieldManager, "status", ""); err != nil {
			return nil, err
		}
	}
	if err := t.base.Apply(gvr, cfg, ns, opts); err != nil {
		if getErr == nil && sub == "status" {
			err = errors.Join(err, t.relabelApplies(gvr, ns, name, opts.FieldManager, "", "status"))
		}
		return nil, err
	}
	applied, err := t.base.Get(gvr, ns, name)
	if err != nil {
		return nil, err
	}
	am, err := meta.Accessor(applied)
	if err != nil {
		return nil, err
	}
	if getErr != nil { // created
		t.remember(gvr, applied)
		if err := t.prepareCreate(gvr, applied, am); err != nil {
			return nil, err
		}
		t.stamp(am)
		if err := t.base.Update(gvr, applied, ns, metav1.UpdateOptions{FieldManager: opts.FieldManager}); err != nil {
			return nil, err
		}
		return t.base.Get(gvr, ns, name)
	}
	final, plain, err := t.prepareUpdate(true, gvr, sub, old, applied)
	if err != nil || plain {
		// Undo the apply: it broke a rule, or it wrote a subresource the
		// rules do not know.
		if undoErr := t.base.Update(gvr, old, ns); undoErr != nil {
			return nil, errors.Join(err, undoErr)
		}
		if err == nil {
			err = apierrors.NewBadRequest(fmt.Sprintf("apply of subresource %q is not supported", sub))
		}
		return nil, err
	}
	if err := keepAppliedFields(final, old, applied, sub, opts.FieldManager); err != nil {
		return nil, err
	}
	return t.commit(gvr, ns, old, final, opts.FieldManager)
}

// relabelApplies moves the manager's apply entry in the stored object's
// managed fields from subresource from to subresource to, in place: no
// other field, and not the resourceVersion, changes. Nothing happens when
// the object has no such entry, or already has one under to.
func (t *strictTracker) relabelApplies(gvr schema.GroupVersionResource, ns, name, manager, from, to string) error {
	current, err := t.base.Get(gvr, ns, name)
	if err != nil {
		return err
	}
	cm, err := meta.Accessor(current)
	if err != nil {
		return err
	}
	managed := slices.Clone(cm.GetManagedFields())
	i := slices.IndexFunc(managed, applyEntry(manager, from))
	if i < 0 || slices.ContainsFunc(managed, applyEntry(manager, to)) {
		return nil
	}
	managed[i].Subresource = to
	relabelled := current.DeepCopyObject()
	rm, err := meta.Accessor(relabelled)
	if err != nil {
		return err
	}
	rm.SetManagedFields(managed)
	return t.base.Update(gvr, relabelled, ns)
}

// applyEntry matches the managed fields entry of manager's applies to the
// subresource sub ("" for the main resource).
func applyEntry(manager, sub string) func(metav1.ManagedFieldsEntry) bool {
	return func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == sub
	}
}

// keepAppliedFields gives final the managed fields the fake's field manager
// computed for the apply (the rules rebuild final from the stored object),
// with the apply's entry recorded under the status subresource for a
// status apply, as the API server records it. The fake's field manager
// knows no subresources: an entry the manager already had for applies to
// the main resource keeps both, under the main resource.
func keepAppliedFields(final, old, applied runtime.Object, sub, manager string) error {
	fm, err := meta.Accessor(final)
	if err != nil {
		return err
	}
	am, err := meta.Accessor(applied)
	if err != nil {
		return err
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return err
	}
	isMine := applyEntry(manager, "")
	managed := slices.Clone(am.GetManagedFields())
	if sub == "status" && !slices.ContainsFunc(om.GetManagedFields(), isMine) {
		for i := range managed {
			if isMine(managed[i]) {
				managed[i].Subresource = "status"
			}
		}
	}
	fm.SetManagedFields(managed)
	return nil
}

// delete answers a delete request: it checks the preconditions, marks an
// object with finalizers as being deleted, and removes one without.
func (t *strictTracker) delete(gvr schema.GroupVersionResource, ns, name string, opts metav1.DeleteOptions) error {
	stored, err := t.base.Get(gvr, ns, name)
	if err != nil {
		return err
	}
	t.remember(gvr, stored)
	sm, err := meta.Accessor(stored)
	if err != nil {
		return err
	}
	if p := opts.Preconditions; p != nil {
		gr := schema.GroupResource{Group: gvr.Group, Resource: kindOf(stored)}
		if p.UID != nil && *p.UID != sm.GetUID() {
			return apierrors.NewConflict(gr, name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, sm.GetUID()))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != sm.GetResourceVersion() {
			return apierrors.NewConflict(gr, name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, sm.GetResourceVersion()))
		}
	}
	finalizers := deletionFinalizers(sm.GetFinalizers(), opts.PropagationPolicy)
	if len(finalizers) == 0 {
		return t.remove(gvr, ns, stored)
	}
	marked := stored.DeepCopyObject()
	mm, err := meta.Accessor(marked)
	if err != nil {
		return err
	}
	mm.SetFinalizers(finalizers)
	if mm.GetDeletionTimestamp() == nil {
		if mm.GetGeneration() > 0 {
			mm.SetGeneration(mm.GetGeneration() + 1)
		}
		now := t.api.now()
		mm.SetDeletionTimestamp(&now)
	}
	mm.SetDeletionGracePeriodSeconds(new(int64))
	if _, err := t.commit(gvr, ns, stored, marked, ""); err != nil {
		return err
	}
	owner := ref{t: t, gvr: gvr, ns: ns, name: name, uid: sm.GetUID()}
	switch {
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		return t.api.orphan(owner)
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		return t.api.deleteDependents(owner)
	}
	return nil
}

// deletionFinalizers returns the finalizers of an object being deleted
// with the given propagation policy: the garbage collector's orphan and
// foregroundDeletion finalizers follow the policy, or stay as they are
// without one.
func deletionFinalizers(finalizers []string, policy *metav1.DeletionPropagation) []string {
	if policy == nil {
		return finalizers
	}
	out := slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool {
		return f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents
	})
	switch *policy {
	case metav1.DeletePropagationOrphan:
		out = append(out, metav1.FinalizerOrphanDependents)
	case metav1.DeletePropagationForeground:
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	if slices.Equal(slices.Sorted(slices.Values(out)), slices.Sorted(slices.Values(finalizers))) {
		return finalizers
	}
	return out
}

// remove removes the stored object last for good, collects its dependents
// and lets owners waiting in the foreground for it go on.
func (t *strictTracker) remove(gvr schema.GroupVersionResource, ns string, last runtime.Object) error {
	m, err := meta.Accessor(last)
	if err != nil {
		return err
	}
	if err := t.base.Delete(gvr, ns, m.GetName()); err != nil {
		return err
	}
	t.api.version++ // a list before the removal and one after differ in version
	var errs []error
	if m.GetUID() != "" {
		for _, dep := range t.api.dependents(m.GetUID(), m.GetNamespace()) {
			errs = append(errs, t.api.attemptToDelete(dep))
		}
	}
	for _, r := range m.GetOwnerReferences() {
		owner, state := t.api.lookup(r, m.GetNamespace())
		if state == waiting {
			errs = append(errs, t.api.finishForeground(owner))
		}
	}
	return errors.Join(errs...)
}

// ref names one stored object.
type ref struct {
	t    *strictTracker
	gvr  schema.GroupVersionResource
	ns   string
	name string
	uid  types.UID
}

// get returns the object r names, if it is still the one r names.
func (r ref) get() (runtime.Object, metav1.Object, bool) {
	obj, err := r.t.base.Get(r.gvr, r.ns, r.name)
	if err != nil {
		return nil, nil, false
	}
	m, err := meta.Accessor(obj)
	if err != nil || m.GetUID() != r.uid {
		return nil, nil, false
	}
	return obj, m, true
}

// dependents returns the objects whose ownerReferences name uid: in
// namespace ns, or in any namespace when ns is empty (a cluster-scoped
// owner).
func (a *StrictAPI) dependents(uid types.UID, ns string) []ref {
	var out []ref
	for _, t := range a.trackers {
		for _, gvr := range slices.SortedFunc(func(yield func(schema.GroupVersionResource) bool) {
			for gvr := range t.kinds {
				if !yield(gvr) {
					return
				}
			}
		}, func(x, y schema.GroupVersionResource) int { return strings.Compare(x.String(), y.String()) }) {
			list, err := t.base.List(gvr, gvr.GroupVersion().WithKind(t.kinds[gvr]), ns)
			if err != nil {
				continue
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				continue
			}
			for _, item := range items {
				m, err := meta.Accessor(item)
				if err != nil {
					continue
				}
				if slices.ContainsFunc(m.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == uid }) {
					out = append(out, ref{t: t, gvr: gvr, ns: m.GetNamespace(), name: m.GetName(), uid: m.GetUID()})
				}
			}
		}
	}
	return out
}

// ownerState is what the garbage collector makes of an owner reference.
type ownerState int

const (
	// absent: no object of the reference's kind, name and uid exists.
	absent ownerState = iota
	// solid: the owner exists (or its kind is unknown).
	solid
	// waiting: the owner is being deleted in the foreground.
	waiting
)

// lookup finds the owner r names for a dependent in namespace ns.
func (a *StrictAPI) lookup(r metav1.OwnerReference, ns string) (ref, ownerState) {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return ref{}, absent
	}
	known := false
	for _, t := range a.trackers {
		for gvr, kind := range t.kinds {
			if gvr.Group != gv.Group || kind != r.Kind {
				continue
			}
			known = true
			for _, n := range slices.Compact([]string{ns, ""}) {
				owner := ref{t: t, gvr: gvr, ns: n, name: r.Name, uid: r.UID}
				if _, m, ok := owner.get(); ok {
					if m.GetDeletionTimestamp() != nil && slices.Contains(m.GetFinalizers(), metav1.FinalizerDeleteDependents) {
						return owner, waiting
					}
					return owner, solid
				}
			}
		}
	}
	if !known {
		return ref{}, solid
	}
	return ref{}, absent
}

// attemptToDelete does for one dependent what the garbage collector does:
// with an owner left, it drops the references to absent owners and to
// owners deleted in the foreground; with none, it deletes the dependent.
func (a *StrictAPI) attemptToDelete(dep ref) error {
	obj, m, ok := dep.get()
	if !ok {
		return nil
	}
	var (
		hasSolid, block bool
		drop            []types.UID
	)
	for _, r := range m.GetOwnerReferences() {
		_, state := a.lookup(r, m.GetNamespace())
		switch state {
		case solid:
			hasSolid = true
		case waiting:
			drop = append(drop, r.UID)
			block = block || (r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion)
		default:
			drop = append(drop, r.UID)
		}
	}
	if hasSolid {
		if len(drop) == 0 {
			return nil
		}
		return a.dropReferences(dep, obj, drop)
	}
	policy := metav1.DeletePropagationBackground
	if block && len(a.dependents(m.GetUID(), m.GetNamespace())) > 0 {
		policy = metav1.DeletePropagationForeground
	}
	err := dep.t.delete(dep.gvr, dep.ns, dep.name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// dropReferences removes the owner references to the given uids from dep.
func (a *StrictAPI) dropReferences(dep ref, obj runtime.Object, uids []types.UID) error {
	updated := obj.DeepCopyObject()
	m, err := meta.Accessor(updated)
	if err != nil {
		return err
	}
	m.SetOwnerReferences(slices.DeleteFunc(m.GetOwnerReferences(), func(r metav1.OwnerReference) bool {
		return slices.Contains(uids, r.UID)
	}))
	_, err = dep.t.commit(dep.gvr, dep.ns, obj, updated, "")
	return err
}

// orphan does what the garbage collector does for an owner deleted with
// the orphan finalizer: drops the references to it, then the finalizer.
func (a *StrictAPI) orphan(owner ref) error {
	var errs []error
	for _, dep := range a.dependents(owner.uid, owner.ns) {
		if obj, _, ok := dep.get(); ok {
			errs = append(errs, a.dropReferences(dep, obj, []types.UID{owner.uid}))
		}
	}
	errs = append(errs, a.dropFinalizer(owner, metav1.FinalizerOrphanDependents))
	return errors.Join(errs...)
}

// deleteDependents does what the garbage collector does for an owner
// deleted in the foreground: it deletes the dependents, and drops the
// owner's finalizer once none that blocks it is left.
func (a *StrictAPI) deleteDependents(owner ref) error {
	var errs []error
	for _, dep := range a.dependents(owner.uid, owner.ns) {
		errs = append(errs, a.attemptToDelete(dep))
	}
	errs = append(errs, a.finishForeground(owner))
	return errors.Join(errs...)
}

// finishForeground drops the foregroundDeletion finalizer of owner when no
// dependent that blocks owner deletion is left.
func (a *StrictAPI) finishForeground(owner ref) error {
	for _, dep := range a.dependents(owner.uid, owner.ns) {
		_, m, ok := dep.get()
		if !ok {
			continue
		}
		for _, r := range m.GetOwnerReferences() {
			if r.UID == owner.uid && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
				return nil
			}
		}
	}
	return a.dropFinalizer(owner, metav1.FinalizerDeleteDependents)
}

// dropFinalizer removes finalizer f from owner, which removes the owner
// if it was the last.
func (a *StrictAPI) dropFinalizer(owner ref, f string) error {
	obj, _, ok := owner.get()
	if !ok {
		return nil
	}
	updated := obj.DeepCopyObject()
	m, err := meta.Accessor(updated)
	if err != nil {
		return err
	}
	m.SetFinalizers(slices.DeleteFunc(m.GetFinalizers(), func(s string) bool { return s == f }))
	_, err = owner.t.commit(owner.gvr, owner.ns, obj, updated, "")
	return err
}

// strategy is what the API server's registry strategy for a resource
// does where a controller can tell. The zero value is the default of the
// built-in kinds: updates without a resourceVersion are unconditional,
// and metadata.generation is not kept.
type strategy struct {
	// conditional: an update (also of the status subresource) must carry
	// a resourceVersion; without one it fails with 422 Invalid
	// (AllowUnconditionalUpdate is false).
	conditional bool
	// startsGeneration: a create sets metadata.generation to 1; otherwise
	// it keeps the generation the create carries.
	startsGeneration bool
	// countsGeneration: an update or patch of the main resource that
	// changes anything outside metadata and status adds 1 to it.
	countsGeneration bool
	// countsMeta names the metadata field ("labels" or "annotations")
	// whose change adds 1 too.
	countsMeta string
}

var (
	generation            = strategy{startsGeneration: true, countsGeneration: true}
	conditional           = strategy{conditional: true}
	conditionalGeneration = strategy{conditional: true, startsGeneration: true, countsGeneration: true}
	// customResource is kube-apiserver's strategy for custom resources:
	// every Unstructured object and every Go type outside k8s.io/api.
	customResource = conditionalGeneration
)

// strategies are the built-in resources whose strategy differs from the
// zero one, as kube-apiserver v1.37 serves them (pkg/registry/<group>/
// <resource>/strategy.go: AllowUnconditionalUpdate, and the Generation
// set by PrepareForCreate and PrepareForUpdate). Every other built-in
// resource allows unconditional updates and keeps no generation: among
// them ConfigMaps, Secrets, Services, Namespaces, Nodes, Endpoints,
// Events, ServiceAccounts, PersistentVolumes and their claims,
// ResourceQuotas, LimitRanges, ControllerRevisions, the RBAC kinds,
// StorageClasses, CertificateSigningRequests, ResourceClaims and
// ServiceCIDRs.
var strategies = map[schema.GroupResource]strategy{
	{Resource: "pods"}:                   generation,
	{Resource: "podtemplates"}:           generation,
	{Resource: "replicationcontrollers"}: generation,

	{Group: "apps", Resource: "deployments"}:  {startsGeneration: true, countsGeneration: true, countsMeta: "annotations"},
	{Group: "apps", Resource: "daemonsets"}:   generation,
	{Group: "apps", Resource: "replicasets"}:  generation,
	{Group: "apps", Resource: "statefulsets"}: generation,

	{Group: "batch", Resource: "jobs"}:                           generation,
	{Group: "batch", Resource: "cronjobs"}:                       generation,
	{Group: "autoscaling", Resource: "horizontalpodautoscalers"}: generation, // feature HPAGeneration, on since v1.37
	{Group: "policy", Resource: "poddisruptionbudgets"}:          conditionalGeneration,

	{Group: "coordination.k8s.io", Resource: "leases"}:          conditional,
	{Group: "coordination.k8s.io", Resource: "leasecandidates"}: conditional,

	{Group: "networking.k8s.io", Resource: "ingresses"}:       generation,
	{Group: "networking.k8s.io", Resource: "ingressclasses"}:  generation,
	{Group: "networking.k8s.io", Resource: "networkpolicies"}: generation,
	{Group: "discovery.k8s.io", Resource: "endpointslices"}:   {startsGeneration: true, countsGeneration: true, countsMeta: "labels"},

	{Group: "scheduling.k8s.io", Resource: "priorityclasses"}:    {startsGeneration: true},
	{Group: "scheduling.k8s.io", Resource: "workloads"}:          conditional,
	{Group: "scheduling.k8s.io", Resource: "podgroups"}:          conditional,
	{Group: "scheduling.k8s.io", Resource: "compositepodgroups"}: conditional,

	{Group: "storage.k8s.io", Resource: "csidrivers"}:           {conditional: true, countsGeneration: true},
	{Group: "storage.k8s.io", Resource: "csinodes"}:             conditional,
	{Group: "storage.k8s.io", Resource: "csistoragecapacities"}: conditional,
	{Group: "storage.k8s.io", Resource: "volumeattachments"}:    conditional,

	{Group: "resource.k8s.io", Resource: "deviceclasses"}:              generation,
	{Group: "resource.k8s.io", Resource: "resourceslices"}:             generation,
	{Group: "resource.k8s.io", Resource: "devicetaintrules"}:           conditionalGeneration, // of v1; v1beta2 and v1alpha3 allow unconditional updates
	{Group: "resource.k8s.io", Resource: "resourcepoolstatusrequests"}: conditional,

	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}:     conditionalGeneration,
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}:   conditionalGeneration,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"}:         conditionalGeneration,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"}:   conditionalGeneration,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}:       conditionalGeneration,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"}: conditionalGeneration,

	{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}:                 generation,
	{Group: "flowcontrol.apiserver.k8s.io", Resource: "prioritylevelconfigurations"}: generation,

	{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}:          conditional,
	{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}:       conditional,
	{Group: "node.k8s.io", Resource: "runtimeclasses"}:                       conditional,
	{Group: "internal.apiserver.k8s.io", Resource: "storageversions"}:        conditional,
	{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations"}: conditional,
	{Group: "lifecycle.k8s.io", Resource: "evictions"}:                       conditionalGeneration,
	{Group: "lifecycle.k8s.io", Resource: "evictionrequests"}:                conditionalGeneration,
}

// builtin tells whether obj is of a built-in kind: a Go type of k8s.io/api.
func builtin(obj runtime.Object) bool {
	return strings.HasPrefix(reflect.TypeOf(obj).Elem().PkgPath(), "k8s.io/api/")
}

// strategyOf returns the strategy the API server follows for obj of
// resource gvr.
func strategyOf(gvr schema.GroupVersionResource, obj runtime.Object) strategy {
	if !builtin(obj) {
		return customResource
	}
	return strategies[gvr.GroupResource()]
}

// specChanged tells whether final differs from stored outside metadata
// and status, or in the metadata field countsMeta names.
func specChanged(countsMeta string, stored, final runtime.Object) (bool, error) {
	before, err := contentOf(stored)
	if err != nil {
		return false, err
	}
	after, err := contentOf(final)
	if err != nil {
		return false, err
	}
	var metaBefore, metaAfter any
	if countsMeta != "" {
		metaBefore, _, _ = unstructured.NestedFieldNoCopy(before, "metadata", countsMeta)
		metaAfter, _, _ = unstructured.NestedFieldNoCopy(after, "metadata", countsMeta)
	}
	for _, c := range []map[string]any{before, after} {
		delete(c, "metadata")
		delete(c, "status")
		delete(c, "apiVersion")
		delete(c, "kind")
	}
	return !equality.Semantic.DeepEqual(before, after) || !equality.Semantic.DeepEqual(metaBefore, metaAfter), nil
}

// sameContent tells whether a and b are the same object apart from
// resourceVersion, managedFields and type metadata: a write of b over a
// changes nothing.
func sameContent(a, b runtime.Object) (bool, error) {
	x, err := contentOf(a)
	if err != nil {
		return false, err
	}
	y, err := contentOf(b)
	if err != nil {
		return false, err
	}
	for _, c := range []map[string]any{x, y} {
		delete(c, "apiVersion")
		delete(c, "kind")
		if md, ok := c["metadata"].(map[string]any); ok {
			delete(md, "resourceVersion")
			delete(md, "managedFields")
		}
	}
	return equality.Semantic.DeepEqual(x, y), nil
}

// contentOf returns the unstructured form of obj, a copy.
func contentOf(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(runtime.Unstructured); ok {
		return runtime.DeepCopyJSON(u.UnstructuredContent()), nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// part returns the top-level field of a typed object whose JSON name is
// name.
func part(obj runtime.Object, name string) (reflect.Value, bool) {
	v := reflect.ValueOf(obj).Elem()
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	for i := range v.NumField() {
		if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ","); tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// copyPart sets field name of dst (which src must not share) to src's.
func copyPart(dst, src runtime.Object, name string) {
	du, dok := dst.(runtime.Unstructured)
	su, sok := src.(runtime.Unstructured)
	if dok && sok {
		content := du.UnstructuredContent()
		if v, ok := su.UnstructuredContent()[name]; ok {
			content[name] = runtime.DeepCopyJSONValue(v)
		} else {
			delete(content, name)
		}
		return
	}
	src = src.DeepCopyObject()
	df, ok := part(dst, name)
	if !ok {
		return
	}
	if sf, ok := part(src, name); ok {
		df.Set(sf)
	}
}

// clearPart removes field name of obj (sets it to its zero value).
func clearPart(obj runtime.Object, name string) {
	if u, ok := obj.(runtime.Unstructured); ok {
		delete(u.UnstructuredContent(), name)
		return
	}
	if f, ok := part(obj, name); ok {
		f.SetZero()
	}
}
