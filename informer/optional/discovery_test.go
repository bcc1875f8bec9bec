package optional_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer/optional"
)

// discovery is a fake discovery client whose answer a test changes while
// it is asked, and that counts the questions.
type discovery struct {
	fakediscovery.FakeDiscovery
	mu     sync.Mutex
	lists  map[string]*metav1.APIResourceList
	err    error
	asked  int
	notify chan struct{}
}

func newDiscovery() *discovery {
	return &discovery{FakeDiscovery: fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}, lists: map[string]*metav1.APIResourceList{}, notify: make(chan struct{}, 100)}
}

func (d *discovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return d.ServerResourcesForGroupVersionWithContext(context.Background(), gv)
}

func (d *discovery) ServerResourcesForGroupVersionWithContext(_ context.Context, gv string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked++
	select {
	case d.notify <- struct{}{}:
	default:
	}
	if d.err != nil {
		return nil, d.err
	}
	if l, ok := d.lists[gv]; ok {
		return l, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
}

func (d *discovery) set(gv string, resources []string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.err = err
	if resources == nil {
		delete(d.lists, gv)
		return
	}
	l := &metav1.APIResourceList{GroupVersion: gv}
	for _, r := range resources {
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: r})
	}
	d.lists[gv] = l
}

func (d *discovery) questions() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.asked
}

var metricsGVR = schema.GroupVersionResource{Group: "metrics.example.com", Version: "v1", Resource: "widgets"}

// An aggregated API (no CRD) is followed by discovery, one question per
// group version and period, with a dynamic informer: it appears, goes
// away, and comes back; a failed discovery keeps the last answer.
func TestFromDiscovery(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	widget := &unstructured.Unstructured{}
	widget.SetAPIVersion("metrics.example.com/v1")
	widget.SetKind("Widget")
	widget.SetNamespace("default")
	widget.SetName("w")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{metricsGVR: "WidgetList"}, widget)
	disc := newDiscovery()
	apis := optional.NewAPIs(crdClient(), disc)
	const period = 20 * time.Millisecond
	optional.SetDiscoveryPeriod(apis, period)
	widgets := optional.NewInformer(apis, metricsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
			dynamicinformer.NewFilteredDynamicInformer(dyn, metricsGVR, "", 0, cache.Indexers{}, nil).Informer())
	}, optional.FromDiscovery())
	// A second Informer of the same group version adds no question.
	gadgets := optional.NewInformer(apis, schema.GroupVersionResource{Group: "metrics.example.com", Version: "v1", Resource: "gadgets"},
		func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
			return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
				dynamicinformer.NewFilteredDynamicInformer(dyn, metricsGVR, "", 0, cache.Indexers{}, nil).Informer())
		}, optional.FromDiscovery())
	var mu sync.Mutex
	var seen []string
	_, remove := widgets.AddEventHandler(context.Background(), cache.TypedResourceEventHandlerFuncs[*unstructured.Unstructured]{
		AddFunc: func(obj *unstructured.Unstructured) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, obj.GetName())
		},
	})
	defer remove()
	adds := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	stop := startAPIs(t, apis)
	require.Eventually(t, apis.HasSynced, waitFor, time.Millisecond)
	assert.Equal(t, optional.Waiting, widgets.State())

	disc.set("metrics.example.com/v1", []string{"widgets"}, nil)
	require.Eventually(t, func() bool { return widgets.State() == optional.Running && widgets.HasSynced() && adds() == 1 }, waitFor, time.Millisecond,
		"the watch of a discovered resource did not start")
	assert.Equal(t, optional.Waiting, gadgets.State(), "a resource discovery does not list started")

	// A failing discovery changes nothing.
	disc.set("metrics.example.com/v1", nil, errors.New("unavailable"))
	drain(disc.notify)
	asked(t, disc.notify, 2)
	assert.Equal(t, optional.Running, widgets.State(), "a failed discovery stopped the watch")

	disc.set("metrics.example.com/v1", nil, nil)
	require.Eventually(t, func() bool { return widgets.State() == optional.Stopped }, waitFor, time.Millisecond, "the watch of a resource gone from discovery did not stop")
	disc.set("metrics.example.com/v1", []string{"widgets", "gadgets"}, nil)
	require.Eventually(t, func() bool {
		return widgets.State() == optional.Running && gadgets.State() == optional.Running && adds() == 2
	}, waitFor, time.Millisecond, "the watch of a resource back in discovery did not start")

	// One question per period for the one group version: n periods ask
	// about n times, never more than once per period.
	before, start := disc.questions(), time.Now()
	asked(t, disc.notify, 5)
	asked, elapsed := disc.questions()-before, time.Since(start)
	assert.LessOrEqual(t, asked, int(elapsed/period)+2, "discovery asked more than once per period and group version")
	stop()
	assert.Equal(t, optional.Stopped, widgets.State())
}

// asked waits until discovery was asked n more times.
func asked(t *testing.T, notify chan struct{}, n int) {
	t.Helper()
	deadline := time.After(waitFor)
	for range n {
		select {
		case <-notify:
		case <-deadline:
			t.Fatalf("discovery was not asked %d times within %s", n, waitFor)
		}
	}
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
