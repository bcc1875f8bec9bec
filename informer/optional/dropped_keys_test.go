package optional_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
)

// Keys that need the resource but came from elsewhere (another watch,
// a periodic resync, Add) are dropped while it is not served: when it is
// served again, they are queued again, not only those its informer maps.
func TestDroppedKeysQueuedWhenTheResourceIsServed(t *testing.T) {
	crds := crdClient()
	apis := optional.NewAPIs(crds, nil)
	newInformer, _ := fooInformers(foofake.NewClientset())
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	r := newRuns()
	// held blocks until cancelled: a short drain ends the test.
	ctrl, err := queue.New("bars", r, queue.WithShutdownTimeout(100*time.Millisecond))
	require.NoError(t, err)
	// The handler maps no Foo to the controller's keys: they all come
	// from elsewhere.
	none := cache.TypedResourceEventHandlerFuncs[*v1alpha1.Foo]{}
	require.NoError(t, ctrl.Watch(optional.On(foos, none, optional.AllKeys[cache.ObjectName])))
	startAPIs(t, apis)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	require.Eventually(t, ctrl.Running, waitFor, time.Millisecond)

	bar := cache.ObjectName{Namespace: "default", Name: "bar"}
	ctrl.Add(bar) // dropped: Foos are not served
	require.Never(t, func() bool { return r.count(bar) > 0 }, 200*time.Millisecond, 5*time.Millisecond,
		"a key that needs Foos ran while they are not served")

	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), fooCRD(map[string]bool{"v1alpha1": true}, true), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.count(bar) == 1 }, waitFor, time.Millisecond,
		"the key dropped while Foos were not served was not queued when they were (Foo Informer %s)", foos.State())

	// A reconcile cancelled as the resource goes runs again when it is
	// back.
	ctrl.Add(held)
	require.Eventually(t, func() bool { return r.count(held) == 1 }, waitFor, time.Millisecond)
	crdsAPI := crds.ApiextensionsV1().CustomResourceDefinitions()
	require.NoError(t, crdsAPI.Delete(context.Background(), "foos.samplecontroller.k8s.io", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return len(r.cause()) == 1 }, waitFor, time.Millisecond, "the reconcile in flight was not cancelled")
	require.ErrorIs(t, r.cause()[0], optional.ErrNotServed)
	_, err = crdsAPI.Create(context.Background(), fooCRD(map[string]bool{"v1alpha1": true}, true), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.count(held) == 2 }, waitFor, time.Millisecond,
		"the key whose reconcile was cancelled as Foos went away did not run again when they were back")
}
