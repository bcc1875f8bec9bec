package optional_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// An Informer of APIs that cannot work cannot work either: its Err
// reports the APIs' error, and Controller.Watch refuses a Watch of it.
func TestInformerOfBrokenAPIsReportsTheirError(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	apis := optional.NewAPIs(nil, nil)
	require.Error(t, apis.Err())
	widgets := optional.NewInformer(apis, gvr, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return nil // never called: the APIs do not start
	})
	require.Error(t, widgets.Err(), "an Informer of broken APIs reports no error")
	assert.ErrorIs(t, widgets.Err(), apis.Err())

	ctrl, err := queue.New("broken", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) { return reconcile.Result{}, nil }))
	require.NoError(t, err)
	err = ctrl.Watch(optional.On(widgets, informer.EnqueueHandler[*unstructured.Unstructured](ctrl), optional.AllKeys[cache.ObjectName]))
	assert.ErrorIs(t, err, apis.Err(), "Watch accepted an Informer of broken APIs")
}
