package owner_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/owner"
)

// wantKey is the test's model of which owner key an object maps to.
func wantKey(obj metav1.Object, gk schema.GroupKind, clusterScoped bool) (cache.ObjectName, bool) {
	var ctrl *metav1.OwnerReference
	for i, r := range obj.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			ctrl = &obj.GetOwnerReferences()[i]
			break
		}
	}
	if ctrl == nil || ctrl.Kind != gk.Kind || ctrl.Name == "" {
		return cache.ObjectName{}, false
	}
	gv, err := schema.ParseGroupVersion(ctrl.APIVersion)
	if err != nil || gv.Group != gk.Group {
		return cache.ObjectName{}, false
	}
	if clusterScoped {
		return cache.ObjectName{Name: ctrl.Name}, true
	}
	if obj.GetNamespace() == "" {
		return cache.ObjectName{}, false
	}
	return cache.ObjectName{Namespace: obj.GetNamespace(), Name: ctrl.Name}, true
}

// FuzzEnqueueOwner feeds objects with arbitrary owner references, api
// versions and kinds, as adds, updates and deletes (with and without
// tombstone, and without object) to EnqueueOwner or EnqueueClusterOwner,
// and checks that the handler never panics and enqueues exactly the keys of
// the matching controllers.
func FuzzEnqueueOwner(f *testing.F) {
	type seed struct {
		event                    uint8
		ns                       string
		api1, kind1, name1, uid1 string
		ctrl1                    bool
		api2, kind2, name2       string
		ctrl2                    bool
		group, kind              string
		clusterScoped, tombstone bool
	}
	for _, s := range []seed{
		{0, "ns", "samplecontroller.k8s.io/v1alpha1", "Foo", "a", "u1", true, "apps/v1", "ReplicaSet", "rs", false, "samplecontroller.k8s.io", "Foo", false, false},
		{0, "ns", "samplecontroller.k8s.io/v1alpha1", "Foo", "a", "u1", false, "samplecontroller.k8s.io/v1", "Foo", "b", true, "samplecontroller.k8s.io", "Foo", false, false},
		{1, "ns", "samplecontroller.k8s.io/v1alpha1", "Foo", "a", "u1", true, "samplecontroller.k8s.io/v1alpha1", "Foo", "b", true, "samplecontroller.k8s.io", "Foo", false, false},
		{1, "ns", "samplecontroller.k8s.io/v1alpha1", "Foo", "a", "u1", true, "samplecontroller.k8s.io/v1alpha1", "Foo", "a", true, "samplecontroller.k8s.io", "Foo", false, false},
		{1, "ns", "v1", "Node", "n", "u1", true, "", "", "", false, "", "Node", true, false},
		{2, "ns", "samplecontroller.k8s.io/v1alpha1", "Foo", "a", "u1", true, "", "", "", false, "samplecontroller.k8s.io", "Foo", false, true},
		{2, "", "samplecontroller.k8s.io/v1alpha1", "Foo", "a", "u1", true, "", "", "", false, "samplecontroller.k8s.io", "Foo", false, true},
		{2, "ns", "a/b/c", "Foo", "a", "u1", true, "", "", "", false, "a", "Foo", false, true},
		{0, "ns", "/v1", "Foo", "a", "u1", true, "", "", "", false, "", "Foo", false, false},
		{0, "ns", "samplecontroller.k8s.io/", "Foo", "", "u1", true, "", "", "", false, "samplecontroller.k8s.io", "Foo", false, false},
		{3, "ns", "samplecontroller.k8s.io/v1alpha1", "Foo", "a", "u1", true, "", "", "", false, "samplecontroller.k8s.io", "Foo", false, true},
	} {
		f.Add(s.event, s.ns, s.api1, s.kind1, s.name1, s.uid1, s.ctrl1, s.api2, s.kind2, s.name2, s.ctrl2, s.group, s.kind, s.clusterScoped, s.tombstone)
	}

	f.Fuzz(func(t *testing.T, event uint8, ns, api1, kind1, name1, uid1 string, ctrl1 bool,
		api2, kind2, name2 string, ctrl2 bool, group, kind string, clusterScoped, tomb bool) {
		gk := schema.GroupKind{Group: group, Kind: kind}
		r1 := metav1.OwnerReference{APIVersion: api1, Kind: kind1, Name: name1, UID: types.UID(uid1), Controller: &ctrl1}
		r2 := metav1.OwnerReference{APIVersion: api2, Kind: kind2, Name: name2, UID: "other", Controller: &ctrl2}
		objA := deployment(ns, "d", r1, r2)
		objB := deployment(ns, "d", r2)

		var got []cache.ObjectName
		q := informer.QueueFunc[cache.ObjectName](func(k cache.ObjectName) { got = append(got, k) })
		var h cache.TypedResourceEventHandler[*appsv1.Deployment]
		if clusterScoped {
			h = owner.EnqueueClusterOwner[*appsv1.Deployment](gk, q)
		} else {
			h = owner.EnqueueOwner[*appsv1.Deployment](gk, q)
		}

		var want []cache.ObjectName
		add := func(obj metav1.Object) {
			if k, ok := wantKey(obj, gk, clusterScoped); ok {
				for _, w := range want {
					if w == k {
						return
					}
				}
				want = append(want, k)
			}
		}
		require.NotPanics(t, func() {
			switch event % 4 {
			case 0:
				h.OnAdd(objA, false)
				add(objA)
			case 1:
				h.OnUpdate(objB, objA)
				add(objA)
				add(objB)
			case 2:
				d := cache.DeletedObject[*appsv1.Deployment]{OptionalObj: objA}
				if tomb {
					// Noticed on a relist: the last known state.
					d.FinalStateUnknown = &cache.DeletedFinalStateUnknown{Key: ns + "/d", Obj: objA}
				}
				h.OnDelete(d)
				add(objA)
			case 3:
				// A delete without any known state names no owner.
				h.OnDelete(cache.DeletedObject[*appsv1.Deployment]{
					FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: ns + "/d"},
				})
			}
		})
		assert.Equal(t, want, got)

		// The lookup and the ownership check agree with the model.
		ref, ok := owner.ControllerOfKind(objA, gk)
		wantRef, wantOK := wantKey(objA, gk, true)
		assert.Equal(t, wantOK, ok)
		assert.Equal(t, wantRef.Name, ref.Name)
		self := &metav1.ObjectMeta{UID: types.UID(uid1)}
		switch owner.Check(objA, self) {
		case owner.Controlled:
			assert.True(t, metav1.IsControlledBy(objA, self))
		case owner.Foreign:
			assert.NotNil(t, metav1.GetControllerOf(objA))
			assert.False(t, metav1.IsControlledBy(objA, self))
		case owner.Orphan:
			assert.Nil(t, metav1.GetControllerOf(objA))
		default:
			t.Fatal("unknown relation")
		}
	})
}
