package reconciletest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// Gizmo is a custom resource whose plural, gizmoes (controller-gen's, and
// so its CRD's and its generated client's), is not the one client-go's
// fake clientsets guess from its kind (gizmos).
type Gizmo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GizmoSpec   `json:"spec,omitempty"`
	Status            GizmoStatus `json:"status,omitempty"`
}

type GizmoSpec struct {
	Size int64 `json:"size,omitempty"`
}

type GizmoStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

func (g *Gizmo) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

type GizmoList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gizmo `json:"items"`
}

func (l *GizmoList) DeepCopyObject() runtime.Object {
	c := *l
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	c.Items = make([]Gizmo, len(l.Items))
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*Gizmo)
	}
	return &c
}

var gizmoes = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmoes"}

// gizmoClientset is built as code-generator's fake clientsets are.
type gizmoClientset struct {
	k8stesting.Fake
	tracker k8stesting.ObjectTracker
}

func (c *gizmoClientset) Tracker() k8stesting.ObjectTracker { return c.tracker }

func newGizmoClientset(t *testing.T, objects ...runtime.Object) *gizmoClientset {
	scheme := runtime.NewScheme()
	gv := gizmoes.GroupVersion()
	scheme.AddKnownTypes(gv, &Gizmo{}, &GizmoList{})
	metav1.AddToGroupVersion(scheme, gv)
	tracker := k8stesting.NewFieldManagedObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder(), managedfields.NewDeducedTypeConverter())
	for _, obj := range objects {
		require.NoError(t, tracker.Add(obj))
	}
	cs := &gizmoClientset{tracker: tracker}
	cs.AddReactor("*", "*", k8stesting.ObjectReaction(tracker))
	cs.AddWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := tracker.Watch(action.GetResource(), action.GetNamespace())
		return true, w, err
	})
	return cs
}

// A generated client asks for gizmoes, which the fake's REST mapper does
// not know: every request of it failed ("no matches for ...
// Resource=gizmoes"). Over Strict, it is served as any other kind.
func TestStrictServesAPluralTheFakeDoesNotGuess(t *testing.T) {
	cs := newGizmoClientset(t)
	reconciletest.Strict(cs)

	_, err := cs.Invokes(k8stesting.NewCreateAction(gizmoes, "ns", &Gizmo{ObjectMeta: metav1.ObjectMeta{Name: "one"}, Spec: GizmoSpec{Size: 1}}), nil)
	require.NoError(t, err, "create")
	w, err := cs.InvokesWatch(k8stesting.NewWatchAction(gizmoes, "ns", metav1.ListOptions{}))
	require.NoError(t, err)
	defer w.Stop()
	got, err := cs.Invokes(k8stesting.NewGetAction(gizmoes, "ns", "one"), nil)
	require.NoError(t, err, "get")
	one := got.(*Gizmo)
	assert.NotEmpty(t, one.ResourceVersion)
	assert.Equal(t, int64(1), one.Generation)

	one.Status.ObservedGeneration = one.Generation
	_, err = cs.Invokes(k8stesting.NewUpdateSubresourceAction(gizmoes, "status", "ns", one), nil)
	require.NoError(t, err, "update of the status")
	_, err = cs.Invokes(k8stesting.NewPatchAction(gizmoes, "ns", "one", types.MergePatchType, []byte(`{"spec":{"size":2}}`)), nil)
	require.NoError(t, err, "patch")

	list, err := cs.Invokes(k8stesting.NewListAction(gizmoes, gizmoes.GroupVersion().WithKind("Gizmo"), "ns", metav1.ListOptions{}), nil)
	require.NoError(t, err, "list")
	require.Len(t, list.(*GizmoList).Items, 1)
	listed := list.(*GizmoList).Items[0]
	assert.Equal(t, int64(2), listed.Spec.Size)
	assert.Equal(t, int64(2), listed.Generation)
	assert.Equal(t, int64(1), listed.Status.ObservedGeneration)

	_, err = cs.Invokes(k8stesting.NewDeleteAction(gizmoes, "ns", "one"), nil)
	require.NoError(t, err, "delete")
	var events []watch.EventType
	timeout := time.After(30 * time.Second)
	for len(events) < 4 {
		select {
		case e := <-w.ResultChan():
			events = append(events, e.Type)
		case <-timeout:
			require.Failf(t, "watch", "events so far: %v", events)
		}
	}
	assert.Equal(t, []watch.EventType{watch.Added, watch.Modified, watch.Modified, watch.Deleted}, events)
}

// Objects of such a resource given to the constructor are found by a
// first get once WithKind tells the kind.
func TestStrictWithKindFindsSeededObjects(t *testing.T) {
	cs := newGizmoClientset(t, &Gizmo{ObjectMeta: metav1.ObjectMeta{Name: "seed", Namespace: "ns"}})
	reconciletest.Strict(cs).WithKind(gizmoes, "Gizmo")
	got, err := cs.Invokes(k8stesting.NewGetAction(gizmoes, "ns", "seed"), nil)
	require.NoError(t, err)
	assert.NotEmpty(t, got.(*Gizmo).ResourceVersion, "a seeded object gets a resourceVersion")
	_, err = cs.Invokes(k8stesting.NewDeleteAction(gizmoes, "ns", "seed"), nil)
	require.NoError(t, err)
}

// A first request that is a server-side apply tells the kind in its body
// (apiVersion and kind), as the API server requires: an apply of a
// resource the fake's REST mapper does not know is served from it.
func TestStrictLearnsTheKindFromAnApply(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
	}{
		{"json", `{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"one","namespace":"ns"},"spec":{"size":3}}`},
		{"yaml", "apiVersion: example.com/v1\nkind: Gizmo\nmetadata:\n  name: one\n  namespace: ns\nspec:\n  size: 3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newGizmoClientset(t)
			reconciletest.Strict(cs)
			apply := k8stesting.NewPatchActionWithOptions(gizmoes, "ns", "one", types.ApplyPatchType, []byte(tc.body), metav1.PatchOptions{FieldManager: "test"})
			_, err := cs.Invokes(apply, nil)
			require.NoError(t, err, "first apply")
			got, err := cs.Invokes(k8stesting.NewGetAction(gizmoes, "ns", "one"), nil)
			require.NoError(t, err, "get")
			assert.Equal(t, int64(3), got.(*Gizmo).Spec.Size)
			assert.NotEmpty(t, got.(*Gizmo).ResourceVersion)
		})
	}
}

// Data is a custom resource of an uncountable kind: its plural, data
// (controller-gen's flect, so its CRD's, and apigen's +resourceName), is
// the kind in lower case, which client-go's fake takes for the singular;
// the fake guesses the plural datas, and keeps the objects given to its
// constructor there. Metadata, Series, Equipment, Information, News,
// Species are such kinds too.
type Data struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GizmoSpec `json:"spec,omitempty"`
}

func (d *Data) DeepCopyObject() runtime.Object {
	c := *d
	d.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

type DataList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Data `json:"items"`
}

func (l *DataList) DeepCopyObject() runtime.Object {
	c := *l
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	c.Items = make([]Data, len(l.Items))
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*Data)
	}
	return &c
}

var dataGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "data"}

// Strict keeps the objects of a resource whose plural is the kind in
// lower case (Data: data), which client-go's fake takes for the singular,
// under the plural the fake guesses (datas), where the fake keeps the
// objects given to its constructor: after WithKind a first get finds a
// seeded object, and an informer's list finds it too.
func TestStrictWithKindFindsSeededObjectsOfAnUncountableKind(t *testing.T) {
	scheme := runtime.NewScheme()
	gv := dataGVR.GroupVersion()
	scheme.AddKnownTypes(gv, &Data{}, &DataList{})
	metav1.AddToGroupVersion(scheme, gv)
	tracker := k8stesting.NewFieldManagedObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder(), managedfields.NewDeducedTypeConverter())
	require.NoError(t, tracker.Add(&Data{ObjectMeta: metav1.ObjectMeta{Name: "seed", Namespace: "ns"}}))
	cs := &gizmoClientset{tracker: tracker}
	cs.AddReactor("*", "*", k8stesting.ObjectReaction(tracker))
	cs.AddWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := tracker.Watch(action.GetResource(), action.GetNamespace())
		return true, w, err
	})
	reconciletest.Strict(cs).WithKind(dataGVR, "Data")

	_, err := cs.Invokes(k8stesting.NewGetAction(dataGVR, "ns", "seed"), nil)
	assert.NoError(t, err, "get of an object given to the constructor, after WithKind")
	list, err := cs.Invokes(k8stesting.NewListAction(dataGVR, gv.WithKind("Data"), "ns", metav1.ListOptions{}), nil)
	require.NoError(t, err, "list")
	assert.Len(t, list.(*DataList).Items, 1, "an informer's list finds the object given to the constructor")
}
