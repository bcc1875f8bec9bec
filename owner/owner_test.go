package owner_test

import (
	"context"
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
		want owner.Ownership
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

func TestOwnershipString(t *testing.T) {
	for o, want := range map[owner.Ownership]string{
		owner.Orphan:        "Orphan",
		owner.Controlled:    "Controlled",
		owner.Foreign:       "Foreign",
		owner.Ownership(42): "Ownership(42)",
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

func TestEnqueueHandler(t *testing.T) {
	inNS := func(name string) cache.ObjectName { return cache.ObjectName{Namespace: "ns", Name: name} }
	a := deployment("ns", "d", fooRef("a"))
	b := deployment("ns", "d", fooRef("b"))
	orphan := deployment("ns", "d")

	tests := []struct {
		name        string
		opts        []owner.Option
		deliver     func(h cache.ResourceEventHandler)
		want        []cache.ObjectName
		wantReports int
	}{
		{name: "add", deliver: func(h cache.ResourceEventHandler) { h.OnAdd(a, true) }, want: []cache.ObjectName{inNS("a")}},
		{name: "add orphan", deliver: func(h cache.ResourceEventHandler) { h.OnAdd(orphan, false) }},
		{name: "add other kind", deliver: func(h cache.ResourceEventHandler) {
			h.OnAdd(deployment("ns", "d", ref("apps/v1", "ReplicaSet", "rs", "u", true)), false)
		}},
		{name: "add pod", deliver: func(h cache.ResourceEventHandler) {
			h.OnAdd(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: []metav1.OwnerReference{fooRef("a")}}}, false)
		}, want: []cache.ObjectName{inNS("a")}},
		{name: "cluster-scoped object with namespaced owner kind", deliver: func(h cache.ResourceEventHandler) {
			h.OnAdd(deployment("", "d", fooRef("a")), false)
		}},
		{name: "cluster-scoped owner", opts: []owner.Option{owner.ClusterScoped()},
			deliver: func(h cache.ResourceEventHandler) { h.OnAdd(a, false) }, want: []cache.ObjectName{{Name: "a"}}},
		{name: "cluster-scoped owner of cluster-scoped object", opts: []owner.Option{nil, owner.ClusterScoped()},
			deliver: func(h cache.ResourceEventHandler) { h.OnAdd(deployment("", "d", fooRef("a")), false) },
			want:    []cache.ObjectName{{Name: "a"}}},
		{name: "update same controller enqueues once", deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(a, a.DeepCopy()) },
			want: []cache.ObjectName{inNS("a")}},
		{name: "update re-parented enqueues new and old", deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(a, b) },
			want: []cache.ObjectName{inNS("b"), inNS("a")}},
		{name: "update adopted", deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(orphan, b) },
			want: []cache.ObjectName{inNS("b")}},
		{name: "update released", deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(a, orphan) },
			want: []cache.ObjectName{inNS("a")}},
		{name: "update orphan", deliver: func(h cache.ResourceEventHandler) { h.OnUpdate(orphan, orphan) }},
		{name: "delete", deliver: func(h cache.ResourceEventHandler) { h.OnDelete(a) }, want: []cache.ObjectName{inNS("a")}},
		{name: "delete tombstone", deliver: func(h cache.ResourceEventHandler) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/d", Obj: b})
		}, want: []cache.ObjectName{inNS("b")}},
		{name: "tombstone without object is reported", deliver: func(h cache.ResourceEventHandler) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/d"})
		}, wantReports: 1},
		{name: "non-object is reported", deliver: func(h cache.ResourceEventHandler) { h.OnAdd("ns/d", false) }, wantReports: 1},
		{name: "handler predicates", opts: []owner.Option{owner.WithHandlerOptions(informer.WithPredicates(
			informer.ObjectFunc(func(d *appsv1.Deployment) bool { return d.Name != "d" })))},
			deliver: func(h cache.ResourceEventHandler) { h.OnAdd(a, false) }},
		{name: "resync dropped by a predicate", opts: []owner.Option{owner.WithHandlerOptions(informer.WithPredicates(informer.ResourceVersionChanged()))},
			deliver: func(h cache.ResourceEventHandler) {
				d := a.DeepCopy()
				d.ResourceVersion = "5"
				h.OnUpdate(d, d)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []cache.ObjectName
			var reports []error
			opts := append([]owner.Option{owner.WithHandlerOptions(informer.WithErrorHandler(
				func(_ context.Context, err error, _ string, _ ...any) { reports = append(reports, err) }))}, tt.opts...)
			h := owner.EnqueueHandler(fooKind, informer.QueueFunc[cache.ObjectName](func(k cache.ObjectName) { got = append(got, k) }), opts...)
			require.NotPanics(t, func() { tt.deliver(h) })
			assert.Equal(t, tt.want, got)
			assert.Len(t, reports, tt.wantReports)
		})
	}
}

func TestEnqueueHandlerPriorities(t *testing.T) {
	withRV := func(d *appsv1.Deployment, rv string) *appsv1.Deployment {
		d.ResourceVersion = rv
		return d
	}
	a := cache.ObjectName{Namespace: "ns", Name: "a"}
	b := cache.ObjectName{Namespace: "ns", Name: "b"}
	tests := []struct {
		name      string
		send      func(h cache.ResourceEventHandler)
		wantFresh []cache.ObjectName
		wantLow   []cache.ObjectName
	}{
		{
			name:    "add from the initial list is low priority",
			send:    func(h cache.ResourceEventHandler) { h.OnAdd(deployment("ns", "d", fooRef("a")), true) },
			wantLow: []cache.ObjectName{a},
		},
		{
			name:      "later add is fresh",
			send:      func(h cache.ResourceEventHandler) { h.OnAdd(deployment("ns", "d", fooRef("a")), false) },
			wantFresh: []cache.ObjectName{a},
		},
		{
			name: "resync is low priority",
			send: func(h cache.ResourceEventHandler) {
				h.OnUpdate(withRV(deployment("ns", "d", fooRef("a")), "7"), withRV(deployment("ns", "d", fooRef("a")), "7"))
			},
			wantLow: []cache.ObjectName{a},
		},
		{
			name: "change is fresh, for the new and the old owner",
			send: func(h cache.ResourceEventHandler) {
				h.OnUpdate(withRV(deployment("ns", "d", fooRef("a")), "7"), withRV(deployment("ns", "d", fooRef("b")), "8"))
			},
			wantFresh: []cache.ObjectName{b, a},
		},
		{
			name: "objects without a resourceVersion are never taken for resyncs",
			send: func(h cache.ResourceEventHandler) {
				h.OnUpdate(deployment("ns", "d", fooRef("a")), deployment("ns", "d", fooRef("a")))
			},
			wantFresh: []cache.ObjectName{a},
		},
		{
			name: "delete is fresh, tombstone included",
			send: func(h cache.ResourceEventHandler) {
				h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/d", Obj: deployment("ns", "d", fooRef("a"))})
			},
			wantFresh: []cache.ObjectName{a},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &lanes{}
			tt.send(owner.EnqueueHandler(fooKind, q))
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
