package optional_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// A controller that turned ready without the CRD stays ready when the
// CRD is installed, while the new informer's initial list goes through
// its (slow) handler: /readyz of every replica does not fail because
// another operator's CRD was installed.
func TestReadyStaysWhenTheCRDIsInstalled(t *testing.T) {
	crds := crdClient()
	apis := optional.NewAPIs(crds, nil)
	newInformer, _ := fooInformers(foofake.NewClientset(foo("a")))
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	release := make(chan struct{})
	defer close(release)
	slow := cache.TypedResourceEventHandlerFuncs[*v1alpha1.Foo]{AddFunc: func(*v1alpha1.Foo) { <-release }}
	ctrl, err := queue.New("foos", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}))
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(optional.On[*v1alpha1.Foo, cache.ObjectName](foos, slow, nil)))
	startAPIs(t, apis)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	defer func() { cancel(); <-done }()
	require.Eventually(t, ctrl.HasSynced, waitFor, time.Millisecond, "not ready without the CRD")

	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), fooCRD(map[string]bool{"v1alpha1": true}, true), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return foos.State() == optional.Running }, waitFor, time.Millisecond)
	assert.Never(t, func() bool { return !ctrl.HasSynced() }, time.Second, 5*time.Millisecond,
		"the ready controller turned not ready because the CRD was installed")
}
