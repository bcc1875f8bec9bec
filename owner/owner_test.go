package owner_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/owner"
)

var fooKind = schema.GroupKind{Group: "samplecontroller.k8s.io", Kind: "Foo"}

func ref(apiVersion, kind, name, uid string, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: &controller}
}

func fooRef(name string) metav1.OwnerReference {
	return ref("samplecontroller.k8s.io/v1alpha1", "Foo", name, "uid-"+name, true)
}

func deployment(ns, name string, refs ...metav1.OwnerReference) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: refs}}
}

func foo(ns, name, uid string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}
}

func TestCheck(t *testing.T) {
	owner1 := foo("ns", "a", "uid-a")
	tests := []struct {
		name string
		refs []metav1.OwnerReference
		want owner.Relation
	}{
		{name: "no owner references", want: owner.Orphan},
		{name: "owner without controller flag", refs: []metav1.OwnerReference{ref("samplecontroller.k8s.io/v1alpha1", "Foo", "a", "uid-a", false)}, want: owner.Orphan},
		{name: "controlled", refs: []metav1.OwnerReference{fooRef("a")}, want: owner.Controlled},
		{name: "controlled through another api version", refs: []metav1.OwnerReference{ref("samplecontroller.k8s.io/v1", "Foo", "a", "uid-a", true)}, want: owner.Controlled},
		{name: "controlled by another foo", refs: []metav1.OwnerReference{fooRef("b")}, want: owner.Foreign},
		{name: "controlled by an earlier foo of the same name", refs: []metav1.OwnerReference{ref("samplecontroller.k8s.io/v1alpha1", "Foo", "a", "old-uid", true)}, want: owner.Foreign},
		{name: "owned but controlled by someone else", refs: []metav1.OwnerReference{
			ref("samplecontroller.k8s.io/v1alpha1", "Foo", "a", "uid-a", false),
			ref("apps/v1", "ReplicaSet", "rs", "uid-rs", true),
		}, want: owner.Foreign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, owner.Check(deployment("ns", "d", tt.refs...), owner1))
		})
	}
}

func TestRelationString(t *testing.T) {
	for o, want := range map[owner.Relation]string{
		owner.Orphan:       "Orphan",
		owner.Controlled:   "Controlled",
		owner.Foreign:      "Foreign",
		owner.Relation(42): "Relation(42)",
		owner.Relation(-1): "Relation(-1)",
	} {
		assert.Equal(t, want, o.String())
	}
}

func TestControllerOfKind(t *testing.T) {
	tests := []struct {
		name     string
		gk       schema.GroupKind
		refs     []metav1.OwnerReference
		wantName string
	}{
		{name: "match", gk: fooKind, refs: []metav1.OwnerReference{fooRef("a")}, wantName: "a"},
		{name: "any version", gk: fooKind, refs: []metav1.OwnerReference{ref("samplecontroller.k8s.io/v2beta3", "Foo", "a", "u", true)}, wantName: "a"},
		{name: "no references", gk: fooKind},
		{name: "not controller", gk: fooKind, refs: []metav1.OwnerReference{ref("samplecontroller.k8s.io/v1alpha1", "Foo", "a", "u", false)}},
		{name: "other kind", gk: fooKind, refs: []metav1.OwnerReference{ref("samplecontroller.k8s.io/v1alpha1", "Bar", "a", "u", true)}},
		{name: "kind is case sensitive", gk: fooKind, refs: []metav1.OwnerReference{ref("samplecontroller.k8s.io/v1alpha1", "foo", "a", "u", true)}},
		{name: "other group", gk: fooKind, refs: []metav1.OwnerReference{ref("other.example.com/v1alpha1", "Foo", "a", "u", true)}},
		{name: "core group", gk: schema.GroupKind{Kind: "Node"}, refs: []metav1.OwnerReference{ref("v1", "Node", "n1", "u", true)}, wantName: "n1"},
		{name: "core group does not match named group", gk: fooKind, refs: []metav1.OwnerReference{ref("v1", "Foo", "a", "u", true)}},
		{name: "named group does not match core", gk: schema.GroupKind{Kind: "Foo"}, refs: []metav1.OwnerReference{fooRef("a")}},
		{name: "unparsable api version", gk: fooKind, refs: []metav1.OwnerReference{ref("samplecontroller.k8s.io/v1/extra", "Foo", "a", "u", true)}},
		{name: "empty name", gk: fooKind, refs: []metav1.OwnerReference{fooRef("")}},
		{name: "controller after other owners", gk: fooKind, refs: []metav1.OwnerReference{
			ref("apps/v1", "ReplicaSet", "rs", "u1", false), fooRef("b"),
		}, wantName: "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment("ns", "d", tt.refs...)
			got, ok := owner.ControllerOfKind(d, tt.gk)
			assert.Equal(t, tt.wantName != "", ok)
			assert.Equal(t, tt.wantName, got.Name)
			if ok {
				// A copy: changing it leaves the object alone.
				got.Name = "changed"
				assert.Equal(t, tt.wantName, metav1.GetControllerOf(d).Name)
			}
		})
	}
}

// handler is the handler type of the tests on Deployments.
type handler = cache.TypedResourceEventHandler[*appsv1.Deployment]

func TestEnqueueOwner(t *testing.T) {
	inNS := func(name string) cache.ObjectName { return cache.ObjectName{Namespace: "ns", Name: name} }
	a := deployment("ns", "d", fooRef("a"))
	b := deployment("ns", "d", fooRef("b"))
	orphan := deployment("ns", "d")

	tests := []struct {
		name string
		// cluster selects EnqueueClusterOwner.
		cluster bool
		opts    []informer.Option
		deliver func(h handler)
		want    []cache.ObjectName
	}{
		{name: "add", deliver: func(h handler) { h.OnAdd(a, true) }, want: []cache.ObjectName{inNS("a")}},
		{name: "add orphan", deliver: func(h handler) { h.OnAdd(orphan, false) }},
		{name: "add other kind", deliver: func(h handler) {
			h.OnAdd(deployment("ns", "d", ref("apps/v1", "ReplicaSet", "rs", "u", true)), false)
		}},
		{name: "cluster-scoped object with namespaced owner kind", deliver: func(h handler) {
			h.OnAdd(deployment("", "d", fooRef("a")), false)
		}},
		{name: "cluster-scoped owner", cluster: true,
			deliver: func(h handler) { h.OnAdd(a, false) }, want: []cache.ObjectName{{Name: "a"}}},
		{name: "cluster-scoped owner of cluster-scoped object", cluster: true, opts: []informer.Option{nil},
			deliver: func(h handler) { h.OnAdd(deployment("", "d", fooRef("a")), false) },
			want:    []cache.ObjectName{{Name: "a"}}},
		{name: "cluster-scoped owner of another kind", cluster: true, deliver: func(h handler) {
			h.OnAdd(deployment("", "d", ref("v1", "Node", "n1", "u", true)), false)
		}},
		{name: "update same controller enqueues once", deliver: func(h handler) { h.OnUpdate(a, a.DeepCopy()) },
			want: []cache.ObjectName{inNS("a")}},
		{name: "update re-parented enqueues new and old", deliver: func(h handler) { h.OnUpdate(a, b) },
			want: []cache.ObjectName{inNS("b"), inNS("a")}},
		{name: "cluster-scoped owner re-parented", cluster: true, deliver: func(h handler) { h.OnUpdate(a, b) },
			want: []cache.ObjectName{{Name: "b"}, {Name: "a"}}},
		{name: "update adopted", deliver: func(h handler) { h.OnUpdate(orphan, b) },
			want: []cache.ObjectName{inNS("b")}},
		{name: "update released", deliver: func(h handler) { h.OnUpdate(a, orphan) },
			want: []cache.ObjectName{inNS("a")}},
		{name: "update orphan", deliver: func(h handler) { h.OnUpdate(orphan, orphan) }},
		{name: "delete", deliver: func(h handler) {
			h.OnDelete(cache.DeletedObject[*appsv1.Deployment]{OptionalObj: a})
		}, want: []cache.ObjectName{inNS("a")}},
		{name: "delete with unknown final state maps the last known state", deliver: func(h handler) {
			h.OnDelete(cache.DeletedObject[*appsv1.Deployment]{
				OptionalObj:       b,
				FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: "ns/d", Obj: b},
			})
		}, want: []cache.ObjectName{inNS("b")}},
		{name: "delete without object names no owner", deliver: func(h handler) {
			h.OnDelete(cache.DeletedObject[*appsv1.Deployment]{FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: "ns/d"}})
		}},
		{name: "delete without object names no cluster-scoped owner", cluster: true, deliver: func(h handler) {
			h.OnDelete(cache.DeletedObject[*appsv1.Deployment]{FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: "d"}})
		}},
		{name: "predicates judge the owned object", opts: []informer.Option{informer.WithPredicates(
			informer.ObjectFunc(func(d *appsv1.Deployment) bool { return d.Name != "d" }))},
			deliver: func(h handler) { h.OnAdd(a, false) }},
		{name: "predicates of a cluster-scoped owner", cluster: true, opts: []informer.Option{informer.WithPredicates(informer.Or())},
			deliver: func(h handler) { h.OnAdd(a, false) }},
		{name: "resync dropped by a predicate", opts: []informer.Option{informer.WithPredicates(informer.ResourceVersionChanged())},
			deliver: func(h handler) {
				d := a.DeepCopy()
				d.ResourceVersion = "5"
				h.OnUpdate(d, d)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []cache.ObjectName
			q := informer.QueueFunc[cache.ObjectName](func(k cache.ObjectName) { got = append(got, k) })
			var h handler
			if tt.cluster {
				h = owner.EnqueueClusterOwner[*appsv1.Deployment](fooKind, q, tt.opts...)
			} else {
				h = owner.EnqueueOwner[*appsv1.Deployment](fooKind, q, tt.opts...)
			}
			require.NotPanics(t, func() { tt.deliver(h) })
			assert.Equal(t, tt.want, got)
		})
	}
}

// The handlers work for objects of any type.
func TestEnqueueOwnerOfPods(t *testing.T) {
	var got []cache.ObjectName
	q := informer.QueueFunc[cache.ObjectName](func(k cache.ObjectName) { got = append(got, k) })
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: []metav1.OwnerReference{fooRef("a")}}}

	owner.EnqueueOwner[*corev1.Pod](fooKind, q).OnAdd(p, false)
	owner.EnqueueClusterOwner[*corev1.Pod](fooKind, q).OnAdd(p, false)
	assert.Equal(t, []cache.ObjectName{{Namespace: "ns", Name: "a"}, {Name: "a"}}, got)
}

func TestEnqueueOwnerPriorities(t *testing.T) {
	withRV := func(d *appsv1.Deployment, rv string) *appsv1.Deployment {
		d.ResourceVersion = rv
		return d
	}
	a := cache.ObjectName{Namespace: "ns", Name: "a"}
	b := cache.ObjectName{Namespace: "ns", Name: "b"}
	tests := []struct {
		name      string
		send      func(h handler)
		wantFresh []cache.ObjectName
		wantLow   []cache.ObjectName
	}{
		{
			name:    "add from the initial list is low priority",
			send:    func(h handler) { h.OnAdd(deployment("ns", "d", fooRef("a")), true) },
			wantLow: []cache.ObjectName{a},
		},
		{
			name:      "later add is fresh",
			send:      func(h handler) { h.OnAdd(deployment("ns", "d", fooRef("a")), false) },
			wantFresh: []cache.ObjectName{a},
		},
		{
			name: "resync is low priority",
			send: func(h handler) {
				h.OnUpdate(withRV(deployment("ns", "d", fooRef("a")), "7"), withRV(deployment("ns", "d", fooRef("a")), "7"))
			},
			wantLow: []cache.ObjectName{a},
		},
		{
			name: "change is fresh, for the new and the old owner",
			send: func(h handler) {
				h.OnUpdate(withRV(deployment("ns", "d", fooRef("a")), "7"), withRV(deployment("ns", "d", fooRef("b")), "8"))
			},
			wantFresh: []cache.ObjectName{b, a},
		},
		{
			name: "objects without a resourceVersion are never taken for resyncs",
			send: func(h handler) {
				h.OnUpdate(deployment("ns", "d", fooRef("a")), deployment("ns", "d", fooRef("a")))
			},
			wantFresh: []cache.ObjectName{a},
		},
		{
			name: "delete is fresh",
			send: func(h handler) {
				h.OnDelete(cache.DeletedObject[*appsv1.Deployment]{OptionalObj: deployment("ns", "d", fooRef("a"))})
			},
			wantFresh: []cache.ObjectName{a},
		},
		{
			name: "delete with unknown final state is fresh",
			send: func(h handler) {
				d := deployment("ns", "d", fooRef("a"))
				h.OnDelete(cache.DeletedObject[*appsv1.Deployment]{
					OptionalObj:       d,
					FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: "ns/d", Obj: d},
				})
			},
			wantFresh: []cache.ObjectName{a},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &lanes{}
			tt.send(owner.EnqueueOwner[*appsv1.Deployment](fooKind, q))
			assert.Equal(t, tt.wantFresh, q.fresh)
			assert.Equal(t, tt.wantLow, q.low)
		})
	}
}

// lanes is an informer.Queue that keeps keys by priority.
type lanes struct{ fresh, low []cache.ObjectName }

func (l *lanes) Add(k cache.ObjectName)            { l.fresh = append(l.fresh, k) }
func (l *lanes) AddLowPriority(k cache.ObjectName) { l.low = append(l.low, k) }

func TestControllerUID(t *testing.T) {
	notController := ref("samplecontroller.k8s.io/v1alpha1", "Foo", "b", "uid-b", false)
	tests := []struct {
		name string
		obj  *appsv1.Deployment
		want []string
	}{
		{"controlled", deployment("ns", "d", fooRef("a")), []string{"uid-a"}},
		{"controller among other owners", deployment("ns", "d", notController, fooRef("a")), []string{"uid-a"}},
		{"owned but not controlled", deployment("ns", "d", notController), nil},
		{"no owner", deployment("ns", "d"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, owner.ControllerUID(tt.obj))
		})
	}
}
