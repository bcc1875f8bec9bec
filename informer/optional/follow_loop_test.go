package optional_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"

	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// hangingDiscovery answers like discovery until hang is called; then
// every question blocks until release, as a request to an aggregated API
// whose backend does not answer blocks until the client's timeout (32s
// for client-go's discovery client).
type hangingDiscovery struct {
	*discovery
	mu      sync.Mutex
	hanging chan struct{}
}

func (d *hangingDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	h := d.hanging
	d.mu.Unlock()
	if h != nil {
		<-h
	}
	return d.discovery.ServerResourcesForGroupVersion(gv)
}

func (d *hangingDiscovery) hang() (release func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := make(chan struct{})
	d.hanging = h
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			d.hanging = nil
			d.mu.Unlock()
			close(h)
		})
	}
}

// followBoth makes APIs following the Foo CRD and, by discovery, an
// aggregated API whose discovery can hang.
func followBoth(t *testing.T) (*optional.APIs, *apiextensionsfake.Clientset, *hangingDiscovery, *optional.Informer[*v1alpha1.Foo], func() int) {
	t.Helper()
	disc := &hangingDiscovery{discovery: newDiscovery()}
	disc.set("metrics.example.com/v1", []string{"widgets"}, nil)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{metricsGVR: "WidgetList"})
	crds := crdClient()
	apis := optional.NewAPIs(crds, disc)
	optional.SetDiscoveryPeriod(apis, 20*time.Millisecond)
	newInformer, made := fooInformers(fake.NewClientset())
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	optional.NewInformer(apis, metricsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, metricsGVR, "", 0, cache.Indexers{}, nil).Informer())
	}, optional.FromDiscovery())
	return apis, crds, disc, foos, made
}

// the loop asks discovery synchronously, so an aggregated API
// whose discovery hangs (its backend down) holds back every CRD-followed
// watch of the cluster: a CRD installed meanwhile does not start its
// watch until discovery returns (up to the client's timeout, every
// period).
func TestHungDiscoveryHoldsBackCRDWatches(t *testing.T) {
	apis, crds, disc, foos, _ := followBoth(t)
	startAPIs(t, apis)
	require.Eventually(t, apis.HasSynced, waitFor, time.Millisecond)
	release := disc.hang()
	defer release()
	time.Sleep(100 * time.Millisecond) // the loop's next period hangs in discovery
	_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), fooCRD(map[string]bool{"v1alpha1": true}, true), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return foos.State() == optional.Running }, 5*time.Second, time.Millisecond,
		"the Foo CRD was installed 5s ago, but its watch waits for the discovery of another group version")
}

// a CRD deleted and re-created (a new UID) while the loop is
// busy (here in a slow discovery; also while it waits for another
// informer to stop) is never seen as removed: the informer of the old
// CRD runs on, no stop is counted or logged, and the reconciles in
// flight of the deleted CRD's objects are not cancelled.
func TestRecreatedCRDKeepsTheOldInformer(t *testing.T) {
	apis, crds, disc, foos, made := followBoth(t)
	_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), fooCRD(map[string]bool{"v1alpha1": true}, true), metav1.CreateOptions{})
	require.NoError(t, err)
	startAPIs(t, apis)
	require.Eventually(t, func() bool { return foos.State() == optional.Running && foos.HasSynced() }, waitFor, time.Millisecond)
	require.Equal(t, 1, made())
	release := disc.hang()
	time.Sleep(100 * time.Millisecond) // the loop's next period hangs in discovery
	require.NoError(t, crds.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), "foos.samplecontroller.k8s.io", metav1.DeleteOptions{}))
	recreated := fooCRD(map[string]bool{"v1alpha1": true}, true)
	recreated.UID = "new-uid"
	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), recreated, metav1.CreateOptions{})
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // the CRD informer sees both
	release()
	time.Sleep(500 * time.Millisecond)
	assert.Equal(t, 2, made(), "the CRD was deleted and re-created with a new UID, but the informer made for the old one still runs")
}
