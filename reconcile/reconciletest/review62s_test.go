package reconciletest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

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

// Review round 10. Strict keeps the objects of a resource whose plural is
// not the fake's guess under the guessed plural, where the fake keeps the
// objects given to its constructor, and WithKind makes a first get find
// them (docs/new-api.md, StrictAPI.WithKind). For a kind whose plural is
// the kind in lower case (Data: data; the fake guesses datas), fakeResources.stored
// serves the request's resource as it is, since the fake's REST mapper
// knows "data" as the singular; but the seeded objects are under "datas":
// a get of one fails with NotFound, even after WithKind, and an informer's
// list finds none. What should happen: as for Gizmo, the seeded object is
// found (store such a resource's objects under the guessed plural too:
// compare with the plural only, not the singular).
func TestReviewStrictWithKindFindsSeededObjectsOfAnUncountableKind(t *testing.T) {
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
