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
	blocked int // guarded by mu: questions blocked now
}

func (d *hangingDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return d.ServerResourcesForGroupVersionWithContext(context.Background(), gv)
}

func (d *hangingDiscovery) ServerResourcesForGroupVersionWithContext(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	h := d.hanging
	d.mu.Unlock()
	if h != nil {
		d.mu.Lock()
		d.blocked++
		d.mu.Unlock()
		select {
		case <-h:
		case <-ctx.Done():
		}
		d.mu.Lock()
		d.blocked--
		d.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return d.discovery.ServerResourcesForGroupVersionWithContext(ctx, gv)
}

// isBlocked reports whether a question is blocked in the hang.
func (d *hangingDiscovery) isBlocked() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.blocked > 0
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

// An aggregated API whose discovery hangs (its backend down) holds back
// no CRD-followed watch of the cluster: a CRD installed meanwhile starts
// its watch at once, not when discovery returns (up to the client's
// timeout, every period).
func TestHungDiscoveryHoldsBackNoCRDWatch(t *testing.T) {
	apis, crds, disc, foos, _ := followBoth(t)
	startAPIs(t, apis)
	require.Eventually(t, apis.HasSynced, waitFor, time.Millisecond)
	release := disc.hang()
	defer release()
	require.Eventually(t, disc.isBlocked, waitFor, time.Millisecond, "the next discovery period hangs")
	_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), fooCRD(map[string]bool{"v1alpha1": true}, true), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return foos.State() == optional.Running }, 5*time.Second, time.Millisecond,
		"the Foo CRD was installed 5s ago, but its watch waits for the discovery of another group version")
}

// A CRD deleted and re-created (a new UID) while the APIs are busy (here
// in a slow discovery; also while the loop waits for another informer to
// stop) restarts the watch: the informer of the old CRD stops (counted),
// and a new one starts for the new CRD.
func TestRecreatedCRDRestartsTheInformer(t *testing.T) {
	apis, crds, disc, foos, made := followBoth(t)
	_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), fooCRD(map[string]bool{"v1alpha1": true}, true), metav1.CreateOptions{})
	require.NoError(t, err)
	startAPIs(t, apis)
	require.Eventually(t, func() bool { return foos.State() == optional.Running && foos.HasSynced() }, waitFor, time.Millisecond)
	require.Equal(t, 1, made())
	release := disc.hang()
	defer release()
	require.Eventually(t, disc.isBlocked, waitFor, time.Millisecond, "the next discovery period hangs")
	require.NoError(t, crds.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), "foos.samplecontroller.k8s.io", metav1.DeleteOptions{}))
	recreated := fooCRD(map[string]bool{"v1alpha1": true}, true)
	recreated.UID = "new-uid"
	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), recreated, metav1.CreateOptions{})
	require.NoError(t, err)
	release()
	assert.Eventually(t, func() bool { return made() == 2 && foos.State() == optional.Running }, waitFor, time.Millisecond,
		"the CRD was deleted and re-created with a new UID, but the informer made for the old one still runs")
}

// A CRD whose UID changes under a running informer (the CRD informer saw
// only the re-created CRD, not the deletion) restarts the watch: the old
// informer's stop is counted and a new informer starts.
func TestNewCRDUIDRestartsTheInformer(t *testing.T) {
	m := newFakeMetrics()
	crds := crdClient(fooCRD(map[string]bool{"v1alpha1": true}, true))
	apis := optional.NewAPIs(crds, nil, optional.WithMetrics(m))
	newInformer, made := fooInformers(fake.NewClientset())
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	startAPIs(t, apis)
	require.Eventually(t, func() bool { return foos.State() == optional.Running && foos.HasSynced() }, waitFor, time.Millisecond)
	require.Equal(t, 1, made())

	recreated := fooCRD(map[string]bool{"v1alpha1": true}, true)
	recreated.UID = "new-uid"
	_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Update(context.Background(), recreated, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return made() == 2 && foos.State() == optional.Running }, waitFor, time.Millisecond,
		"the CRD has a new UID, but the informer made for the old one still runs")
	state, stops := m.state("|foos.samplecontroller.k8s.io/v1alpha1")
	assert.Equal(t, optional.Running, state)
	assert.Equal(t, 1, stops, "the old informer's stop is counted")

	// The same CRD updated again (same UID) restarts nothing.
	recreated.Labels = map[string]string{"changed": "yes"}
	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Update(context.Background(), recreated, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Never(t, func() bool { return made() != 2 }, 200*time.Millisecond, 5*time.Millisecond, "an update of the same CRD restarted its informer")
}
