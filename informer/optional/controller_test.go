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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/informer/optional"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// runs counts the reconciles of a controller by key; the key "default/held"
// blocks until its context ends, and its cause is recorded.
type runs struct {
	mu      sync.Mutex
	counts  map[cache.ObjectName]int
	entered chan cache.ObjectName
	causes  []error
}

func newRuns() *runs {
	return &runs{counts: map[cache.ObjectName]int{}, entered: make(chan cache.ObjectName, 100)}
}

var held = cache.ObjectName{Namespace: "default", Name: "held"}

func (r *runs) Reconcile(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
	r.mu.Lock()
	r.counts[key]++
	r.mu.Unlock()
	r.entered <- key
	if key == held {
		<-ctx.Done()
		r.mu.Lock()
		r.causes = append(r.causes, context.Cause(ctx))
		r.mu.Unlock()
		return reconcile.Result{}, context.Cause(ctx)
	}
	return reconcile.Result{}, nil
}

func (r *runs) count(key cache.ObjectName) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[key]
}

func (r *runs) cause() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.causes...)
}

func foo(name string) *v1alpha1.Foo {
	return &v1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}

// A controller of an optional resource starts and turns ready while its
// CRD is absent; its watch starts when the CRD is installed and its keys
// run; it stops when the CRD is removed (its keys dropped, its reconcile
// in flight cancelled, counted), and comes back with the CRD; a version
// no longer served stops it like a removed CRD, and a version served
// again starts it.
func TestControllerFollowsItsCRD(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	fooClient := foofake.NewClientset(foo("a"), foo("b"))
	crds := crdClient()
	m := newFakeMetrics()
	apis := optional.NewAPIs(crds, nil, optional.WithMetrics(m), optional.WithName("member"))
	newInformer, made := fooInformers(fooClient)
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	require.NoError(t, foos.Err())
	r := newRuns()
	// held is in flight at the stop: it ends once the shutdown timeout
	// cancels it.
	ctrl, err := queue.New("foos", r, queue.WithWorkers(2), queue.WithShutdownTimeout(time.Second))
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(optional.On(foos, informer.EnqueueHandler[*v1alpha1.Foo](ctrl), optional.AllKeys[cache.ObjectName])))
	const series = "member|foos.samplecontroller.k8s.io/v1alpha1"
	a, b := cache.ObjectName{Namespace: "default", Name: "a"}, cache.ObjectName{Namespace: "default", Name: "b"}

	stopAPIs := startAPIs(t, apis)
	runCtx, stopCtrl := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(runCtx) }()

	// Absent: ready, waiting, no informer made, keys dropped.
	require.Eventually(t, ctrl.HasSynced, waitFor, time.Millisecond, "the controller is not ready without its CRD")
	assert.Equal(t, optional.Waiting, foos.State())
	assert.Zero(t, made(), "an informer was made for a resource not served")
	state, _ := m.state(series)
	assert.Equal(t, optional.Waiting, state)
	ctrl.Add(a)
	assert.Zero(t, ctrl.Len(), "a key of a resource not served was queued")
	_, ok := foos.Current()
	assert.False(t, ok)

	// Installed: the watch starts, its keys run.
	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, fooCRD(map[string]bool{"v1alpha1": true}, true), metav1.CreateOptions{})
	require.NoError(t, err)
	// a was dropped while the resource was absent, so it may run twice:
	// from the informer's list and queued again once h has seen it.
	require.Eventually(t, func() bool { return r.count(a) >= 1 && r.count(b) == 1 }, waitFor, time.Millisecond, "the keys of the installed resource did not run")
	assert.Equal(t, optional.Running, foos.State())
	assert.Equal(t, 1, made())
	state, _ = m.state(series)
	assert.Equal(t, optional.Running, state)
	inf, ok := foos.Current()
	require.True(t, ok)
	assert.Len(t, inf.GetStore().List(), 2, "the running informer's cache")

	// Removed while a reconcile runs: it is cancelled, the keys are
	// dropped, the stop counted.
	ctrl.Add(held)
	require.Eventually(t, func() bool { return r.count(held) == 1 }, waitFor, time.Millisecond)
	require.NoError(t, crds.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "foos.samplecontroller.k8s.io", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return len(r.cause()) == 1 && ctrl.Active() == 0 }, waitFor, time.Millisecond, "the reconcile in flight was not cancelled")
	assert.ErrorIs(t, r.cause()[0], optional.ErrNotServed)
	assert.Equal(t, optional.Stopped, foos.State())
	// The stop is counted, and its state set, just after the cancel.
	require.Eventually(t, func() bool {
		state, stops := m.state(series)
		return state == optional.Stopped && stops == 1
	}, waitFor, time.Millisecond, "the stop was not counted")
	ctrl.Add(a)
	ctrl.Add(held)
	assert.Zero(t, ctrl.Len(), "keys of a removed resource were queued")
	assert.Equal(t, 1, r.count(held), "the cancelled reconcile was retried")
	assert.True(t, ctrl.HasSynced(), "a removed resource made the controller not ready")

	// Installed again: a new informer, the keys run again.
	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, fooCRD(map[string]bool{"v1alpha1": true}, true), metav1.CreateOptions{})
	require.NoError(t, err)
	// a was dropped while the resource was away, so it may run twice: from
	// the new informer's list and queued again once h has seen it.
	require.Eventually(t, func() bool { return r.count(a) >= 2 && r.count(b) == 2 && r.count(held) == 2 }, waitFor, time.Millisecond, "the keys of the reinstalled resource did not run")
	assert.Equal(t, 2, made())

	// A version no longer served stops the watch; served again, it starts.
	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, fooCRD(map[string]bool{"v1alpha1": false, "v1beta1": true}, true), metav1.UpdateOptions{})
	require.NoError(t, err)
	// The stop is counted just after the state changes.
	require.Eventually(t, func() bool {
		_, stops := m.state(series)
		return foos.State() == optional.Stopped && ctrl.Active() == 0 && stops == 2
	}, waitFor, time.Millisecond, "a version no longer served is still watched")
	// No reconcile runs while the version is not served: every run from
	// now on is of the next informer.
	ranA, ranB := r.count(a), r.count(b)
	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, fooCRD(map[string]bool{"v1alpha1": true, "v1beta1": true}, true), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.count(a) > ranA && r.count(b) > ranB && r.count(held) == 3 }, waitFor, time.Millisecond, "a version served again did not start its watch")
	assert.Equal(t, 3, made())

	stopCtrl()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Run did not return")
	}
	stopAPIs()
	assert.Equal(t, optional.Stopped, foos.State(), "the informer runs on after the APIs shut down")
}

// A resource is served only while its CRD is established and serves the
// resource's version, also while the CRD is being deleted (its objects'
// finalizers may be the controller's).
func TestServedByCRD(t *testing.T) {
	deleting := fooCRD(map[string]bool{"v1alpha1": true}, true)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deleting.Finalizers = []string{"customresourcecleanup.apiextensions.k8s.io"}
	tests := []struct {
		name   string
		crd    *apiextensionsv1.CustomResourceDefinition
		served bool
	}{
		{name: "no CRD"},
		{name: "served and established", crd: fooCRD(map[string]bool{"v1alpha1": true}, true), served: true},
		{name: "served among others", crd: fooCRD(map[string]bool{"v1": true, "v1alpha1": true}, true), served: true},
		{name: "not established", crd: fooCRD(map[string]bool{"v1alpha1": true}, false)},
		{name: "version not served", crd: fooCRD(map[string]bool{"v1alpha1": false, "v1": true}, true)},
		{name: "version absent", crd: fooCRD(map[string]bool{"v1": true}, true)},
		{name: "being deleted", crd: deleting, served: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			var crds = crdClient()
			if tt.crd != nil {
				crds = crdClient(tt.crd)
			}
			apis := optional.NewAPIs(crds, nil)
			newInformer, made := fooInformers(foofake.NewClientset())
			foos := optional.NewInformer(apis, foosGVR, newInformer)
			stop := startAPIs(t, apis)
			synced := apis.WaitForCacheSync(make(chan struct{}))
			for typ, ok := range synced {
				assert.True(t, ok, "%v did not sync", typ)
			}
			assert.Len(t, synced, 2, "the CRD informer and the Foo informer are reported")
			assert.Equal(t, tt.served, apis.Served(foosGVR))
			assert.True(t, foos.HasSynced())
			want, wantMade := optional.Waiting, 0
			if tt.served {
				want, wantMade = optional.Running, 1
			}
			assert.Equal(t, want, foos.State())
			assert.Equal(t, wantMade, made())
			stop()
		})
	}
}

// A Watch with no needs function gates no key: the controller's keys run
// while the resource is absent; only the watch follows it.
func TestOnWithoutNeeds(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	apis := optional.NewAPIs(crdClient(), nil)
	newInformer, _ := fooInformers(foofake.NewClientset(foo("a")))
	foos := optional.NewInformer(apis, foosGVR, newInformer)
	r := newRuns()
	ctrl, err := queue.New("others", r)
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(optional.On[*v1alpha1.Foo, cache.ObjectName](foos, informer.EnqueueHandler[*v1alpha1.Foo](ctrl), nil)))
	stop := startAPIs(t, apis)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	other := cache.ObjectName{Namespace: "default", Name: "other"}
	ctrl.Add(other)
	require.Eventually(t, func() bool { return r.count(other) == 1 }, waitFor, time.Millisecond)
	assert.Equal(t, optional.Waiting, foos.State())
	cancel()
	require.NoError(t, <-done)
	stop()
}

// Mistakes are reported by Err and refused by Controller.Watch.
func TestRefused(t *testing.T) {
	newInformer, _ := fooInformers(foofake.NewClientset())
	good := optional.NewAPIs(crdClient(), nil)
	tests := []struct {
		name    string
		err     func() error
		wantErr string
	}{
		{name: "no CRD client", err: optional.NewAPIs(nil, nil).Err, wantErr: "optional: NewAPIs needs a CRD clientset"},
		{name: "informer option to NewAPIs", err: optional.NewAPIs(crdClient(), nil, optional.FromDiscovery()).Err,
			wantErr: "optional: FromDiscovery applies to NewInformer, not NewAPIs"},
		{name: "short discovery period", err: optional.NewAPIs(crdClient(), nil, optional.WithDiscoveryPeriod(time.Second)).Err,
			wantErr: "optional: discovery period 1s is shorter than 5s"},
		{name: "no APIs", err: optional.NewInformer(nil, foosGVR, newInformer).Err, wantErr: "optional: NewInformer needs APIs"},
		{name: "no informer function", err: optional.NewInformer[*v1alpha1.Foo](good, foosGVR, nil).Err,
			wantErr: "optional: NewInformer of foos.samplecontroller.k8s.io/v1alpha1 needs a function that makes informers"},
		{name: "APIs option to NewInformer", err: optional.NewInformer(optional.NewAPIs(crdClient(), nil), foosGVR, newInformer, optional.WithName("x")).Err,
			wantErr: "optional: WithName applies to NewAPIs, not NewInformer"},
		{name: "discovery without a client", err: optional.NewInformer(optional.NewAPIs(crdClient(), nil), foosGVR, newInformer, optional.FromDiscovery()).Err,
			wantErr: "optional: foos.samplecontroller.k8s.io/v1alpha1 is followed by discovery, but the APIs have no discovery client"},
		{name: "watch of a broken informer", err: func() error {
			ctrl, err := queue.New("c", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) { return reconcile.Result{}, nil }))
			require.NoError(t, err)
			broken := optional.NewInformer(nil, foosGVR, newInformer)
			return ctrl.Watch(optional.On(broken, informer.EnqueueHandler[*v1alpha1.Foo](ctrl), optional.AllKeys[cache.ObjectName]))
		}, wantErr: `queue: controller "c": Watch 0: optional: NewInformer needs APIs`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.EqualError(t, tt.err(), tt.wantErr)
		})
	}
	t.Run("after Start", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		apis := optional.NewAPIs(crdClient(), nil)
		stop := startAPIs(t, apis)
		late := optional.NewInformer(apis, foosGVR, newInformer)
		assert.EqualError(t, late.Err(), "optional: NewInformer called after the APIs started")
		assert.Error(t, apis.Err(), "the APIs do not report the late Informer")
		stop()
	})
	assert.True(t, errors.Is(optional.ErrNotServed, optional.ErrNotServed))
}
