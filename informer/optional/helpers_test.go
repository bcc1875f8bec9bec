package optional_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// waitFor bounds every wait of these tests: long enough for a loaded
// 2-core machine.
const waitFor = 30 * time.Second

var foosGVR = schema.GroupVersionResource{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Resource: "foos"}

// fooCRD is the Foo CRD, serving the versions given as served (name ->
// served), established unless notEstablished.
func fooCRD(versions map[string]bool, established bool) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "foos.samplecontroller.k8s.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "samplecontroller.k8s.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "foos", Kind: "Foo"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	for _, name := range slices.Sorted(maps.Keys(versions)) {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: versions[name], Storage: true})
	}
	status := apiextensionsv1.ConditionFalse
	if established {
		status = apiextensionsv1.ConditionTrue
	}
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: status}}
	return crd
}

// fooInformers returns a function that makes a new typed Foo informer of
// a new generated factory each time, and counts them.
func fooInformers(client fooclientset.Interface) (newInformer func() cache.TypedSharedIndexInformer[*v1alpha1.Foo], made func() int) {
	var mu sync.Mutex
	n := 0
	return func() cache.TypedSharedIndexInformer[*v1alpha1.Foo] {
			mu.Lock()
			n++
			mu.Unlock()
			return fooinformers.NewSharedInformerFactory(client, 0).Samplecontroller().V1alpha1().Foos().TypedInformer()
		}, func() int {
			mu.Lock()
			defer mu.Unlock()
			return n
		}
}

// fakeMetrics records the states and stops of Informers.
type fakeMetrics struct {
	mu     sync.Mutex
	states map[string]optional.State
	stops  map[string]int
}

func newFakeMetrics() *fakeMetrics {
	return &fakeMetrics{states: map[string]optional.State{}, stops: map[string]int{}}
}

func (m *fakeMetrics) SetAPIWatchState(cluster, resource string, s optional.State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.states[cluster+"|"+resource] = s
}

func (m *fakeMetrics) DeleteAPIWatchState(cluster, resource string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.states, cluster+"|"+resource)
}

func (m *fakeMetrics) IncAPIWatchStops(cluster, resource string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stops[cluster+"|"+resource]++
}

func (m *fakeMetrics) state(key string) (optional.State, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.states[key], m.stops[key]
}

// startAPIs starts apis until the test ends, and then shuts it down.
func startAPIs(t *testing.T, apis *optional.APIs) (stop func()) {
	t.Helper()
	require.NoError(t, apis.Err())
	ctx, cancel := context.WithCancel(context.Background())
	apis.StartWithContext(ctx)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			apis.Shutdown()
		})
	}
	t.Cleanup(stop)
	return stop
}

// crdClient is a fake apiextensions clientset holding objs.
func crdClient(objs ...*apiextensionsv1.CustomResourceDefinition) *apiextensionsfake.Clientset {
	c := apiextensionsfake.NewClientset()
	for _, o := range objs {
		_, _ = c.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), o, metav1.CreateOptions{})
	}
	return c
}
