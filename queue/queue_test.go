package queue_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

const waitFor = 10 * time.Second

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// recordingLimiter wraps a rate limiter of any keys, as WithRateLimiter
// takes, and remembers, per key, how many retry delays it was asked for and
// how often it was told to forget the key.
type recordingLimiter struct {
	workqueue.TypedRateLimiter[any]
	mu      sync.Mutex
	whens   map[any]int
	forgets map[any]int
}

func newRecordingLimiter(base workqueue.TypedRateLimiter[any]) *recordingLimiter {
	return &recordingLimiter{TypedRateLimiter: base, whens: map[any]int{}, forgets: map[any]int{}}
}

func (r *recordingLimiter) When(key any) time.Duration {
	r.mu.Lock()
	r.whens[key]++
	r.mu.Unlock()
	return r.TypedRateLimiter.When(key)
}

func (r *recordingLimiter) Forget(key any) {
	r.mu.Lock()
	r.forgets[key]++
	r.mu.Unlock()
	r.TypedRateLimiter.Forget(key)
}

func (r *recordingLimiter) counts(key any) (whens, forgets int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.whens[key], r.forgets[key]
}

// fakeMetrics records observations for assertions.
type fakeMetrics struct {
	queue.NoopMetrics
	mu         sync.Mutex
	obs        []queue.Observation
	active     int
	maxActive  int
	maxWorkers int
	queueNames []string
}

func (f *fakeMetrics) ObserveReconcile(controller string, o queue.Observation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.obs = append(f.obs, o)
}

func (f *fakeMetrics) AddActiveWorkers(controller string, delta int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active += delta
	f.maxActive = max(f.maxActive, f.active)
}

func (f *fakeMetrics) SetMaxWorkers(controller string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maxWorkers = n
}

func (f *fakeMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queueNames = append(f.queueNames, name)
	return f.NoopMetrics.NewDepthMetric(name)
}

func (f *fakeMetrics) observations() []queue.Observation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]queue.Observation(nil), f.obs...)
}

// startController runs c in the background and returns a function that
// cancels it and returns Run's error.
func startController[K comparable](t *testing.T, ctx context.Context, c *queue.Controller[K]) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(waitFor):
				runErr = errors.New("Run did not return")
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func TestOutcomes(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New("changed"))
	tests := []struct {
		name string
		// results are returned on successive calls; the last one repeats.
		results     []func() (reconcile.Result, error)
		wantCalls   int
		wantWhens   int // retries asked of the rate limiter
		wantForgets int
		wantObs     []queue.Observation
		wantErrLog  bool
	}{
		{
			name:        "success forgets the key",
			results:     []func() (reconcile.Result, error){ok},
			wantCalls:   1,
			wantForgets: 1,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeSuccess}},
		},
		{
			name: "requeue after forgets backoff and runs again",
			results: []func() (reconcile.Result, error){
				func() (reconcile.Result, error) { return reconcile.Result{RequeueAfter: time.Millisecond}, nil },
				ok,
			},
			wantCalls:   2,
			wantForgets: 2,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeRequeueAfter}, {Outcome: queue.OutcomeSuccess}},
		},
		{
			name:        "error is retried with rate limiting until success",
			results:     []func() (reconcile.Result, error){fail("boom"), fail("boom"), ok},
			wantCalls:   3,
			wantWhens:   2,
			wantForgets: 1,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeError}, {Outcome: queue.OutcomeError}, {Outcome: queue.OutcomeSuccess}},
			wantErrLog:  true,
		},
		{
			name: "error wins over RequeueAfter",
			results: []func() (reconcile.Result, error){
				func() (reconcile.Result, error) { return reconcile.Result{RequeueAfter: time.Hour}, errors.New("boom") },
				ok,
			},
			wantCalls:   2,
			wantWhens:   1,
			wantForgets: 1,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeError}, {Outcome: queue.OutcomeSuccess}},
			wantErrLog:  true,
		},
		{
			name: "terminal error is not retried",
			results: []func() (reconcile.Result, error){func() (reconcile.Result, error) {
				return reconcile.Result{}, fmt.Errorf("validating: %w", reconcile.Terminal(errors.New("bad spec")))
			}},
			wantCalls:   1,
			wantForgets: 1,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeError, Terminal: true}},
			wantErrLog:  true,
		},
		{
			name:        "conflict is retried quietly",
			results:     []func() (reconcile.Result, error){func() (reconcile.Result, error) { return reconcile.Result{}, fmt.Errorf("update: %w", conflict) }, ok},
			wantCalls:   2,
			wantWhens:   1,
			wantForgets: 1,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeError}, {Outcome: queue.OutcomeSuccess}},
		},
		{
			name: "already exists is a conflict too",
			results: []func() (reconcile.Result, error){func() (reconcile.Result, error) {
				return reconcile.Result{}, fmt.Errorf("create: %w", apierrors.NewAlreadyExists(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web"))
			}, ok},
			wantCalls:   2,
			wantWhens:   1,
			wantForgets: 1,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeError}, {Outcome: queue.OutcomeSuccess}},
		},
		{
			name: "conflicts joined to conflicts are quiet",
			results: []func() (reconcile.Result, error){func() (reconcile.Result, error) {
				return reconcile.Result{}, errors.Join(conflict, fmt.Errorf("status: %w", conflict))
			}, ok},
			wantCalls:   2,
			wantWhens:   1,
			wantForgets: 1,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeError}, {Outcome: queue.OutcomeSuccess}},
		},
		{
			name: "a stale cache is requeued quietly and not counted as an error",
			results: []func() (reconcile.Result, error){func() (reconcile.Result, error) {
				return reconcile.Result{}, fmt.Errorf("ensure: %w", reconcile.StaleCache(conflict))
			}, ok},
			wantCalls:   2,
			wantWhens:   1,
			wantForgets: 1,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeRequeue}, {Outcome: queue.OutcomeSuccess}},
		},
		{
			name: "a failure joined to a stale cache is an error",
			results: []func() (reconcile.Result, error){func() (reconcile.Result, error) {
				return reconcile.Result{}, errors.Join(reconcile.StaleCache(nil), errors.New("boom"))
			}, ok},
			wantCalls:   2,
			wantWhens:   1,
			wantForgets: 1,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeError}, {Outcome: queue.OutcomeSuccess}},
			wantErrLog:  true,
		},
		{
			name: "a terminal stale cache is terminal",
			results: []func() (reconcile.Result, error){func() (reconcile.Result, error) {
				return reconcile.Result{}, reconcile.Terminal(reconcile.StaleCache(nil))
			}},
			wantCalls:   1,
			wantForgets: 1,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeError, Terminal: true}},
			wantErrLog:  true,
		},
		{
			name: "a failure joined after a conflict is logged",
			results: []func() (reconcile.Result, error){func() (reconcile.Result, error) {
				return reconcile.Result{}, errors.Join(conflict, apierrors.NewForbidden(schema.GroupResource{Resource: "foos"}, "a", errors.New("no")))
			}, ok},
			wantCalls:   2,
			wantWhens:   1,
			wantForgets: 1,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeError}, {Outcome: queue.OutcomeSuccess}},
			wantErrLog:  true,
		},
		{
			name: "a failure joined before a conflict is logged",
			results: []func() (reconcile.Result, error){func() (reconcile.Result, error) {
				return reconcile.Result{}, fmt.Errorf("sync: %w", errors.Join(errors.New("boom"), conflict))
			}, ok},
			wantCalls:   2,
			wantWhens:   1,
			wantForgets: 1,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeError}, {Outcome: queue.OutcomeSuccess}},
			wantErrLog:  true,
		},
		{
			name:        "panic is recovered and retried",
			results:     []func() (reconcile.Result, error){func() (reconcile.Result, error) { panic("nil map") }, ok},
			wantCalls:   2,
			wantWhens:   1,
			wantForgets: 1,
			wantObs:     []queue.Observation{{Outcome: queue.OutcomeError, Panicked: true}, {Outcome: queue.OutcomeSuccess}},
			wantErrLog:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
				n := int(calls.Add(1))
				return tt.results[min(n, len(tt.results))-1]()
			})
			limiter := newRecordingLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[any](time.Millisecond, 10*time.Millisecond))
			metrics := &fakeMetrics{}
			logs := &logBuffer{}
			c, err := queue.New("outcomes", r, queue.WithRateLimiter(limiter), queue.WithMetrics(metrics))
			require.NoError(t, err)
			stop := startController(t, logs.context(), c)

			c.Add("ns/a")
			require.Eventually(t, func() bool { return len(metrics.observations()) == len(tt.wantObs) },
				waitFor, time.Millisecond, "observations: %+v", metrics.observations())
			require.NoError(t, stop())

			assert.Equal(t, tt.wantCalls, int(calls.Load()))
			whens, forgets := limiter.counts("ns/a")
			assert.Equal(t, tt.wantWhens, whens, "retries through the rate limiter")
			assert.Equal(t, tt.wantForgets, forgets, "Forget calls")
			got := metrics.observations()
			for i := range got {
				got[i].Duration = 0
			}
			assert.Equal(t, tt.wantObs, got)
			assert.Equal(t, tt.wantErrLog, logs.hasError("ns/a"), "error-level log line:\n%s", logs.String())
			assert.Equal(t, 0, metrics.active, "active workers after shutdown")
			assert.Equal(t, 1, metrics.maxActive)
			assert.Equal(t, 1, metrics.maxWorkers)
			assert.Equal(t, []string{"outcomes"}, metrics.queueNames, "workqueue metrics use the controller's name")
		})
	}
}

func ok() (reconcile.Result, error) { return reconcile.Result{}, nil }

func fail(msg string) func() (reconcile.Result, error) {
	return func() (reconcile.Result, error) { return reconcile.Result{}, errors.New(msg) }
}

func TestTerminalErrorLoggedOnce(t *testing.T) {
	var calls atomic.Int32
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		calls.Add(1)
		return reconcile.Result{}, reconcile.Terminal(errors.New("invalid spec"))
	})
	metrics := &fakeMetrics{}
	logs := &logBuffer{}
	c, err := queue.New("terminal", r, queue.WithMetrics(metrics))
	require.NoError(t, err)
	stop := startController(t, logs.context(), c)
	c.Add("ns/a")
	require.Eventually(t, func() bool { return len(metrics.observations()) == 1 }, waitFor, time.Millisecond)
	// A later key on the single worker proves the terminal key was not requeued ahead of it.
	c.Add("ns/b")
	require.Eventually(t, func() bool { return len(metrics.observations()) == 2 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
	assert.Equal(t, int32(2), calls.Load())
	assert.Equal(t, 1, strings.Count(logs.String(), `"key"="ns/a"`), logs.String())
}

func TestOneWorkerPerKeyAndCoalescing(t *testing.T) {
	var (
		mu       sync.Mutex
		running  = map[string]int{}
		overlaps int
		runs     = map[string]int{}
	)
	release := make(chan struct{})
	entered := make(chan string, 100)
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		mu.Lock()
		running[key]++
		if running[key] > 1 {
			overlaps++
		}
		runs[key]++
		first := runs[key] == 1
		mu.Unlock()
		entered <- key
		if first && key == "ns/hot" {
			<-release
		}
		mu.Lock()
		running[key]--
		mu.Unlock()
		return reconcile.Result{}, nil
	})
	metrics := &fakeMetrics{}
	c, err := queue.New("coalesce", r, queue.WithWorkers(8), queue.WithMetrics(metrics))
	require.NoError(t, err)
	stop := startController(t, context.Background(), c)

	c.Add("ns/hot")
	require.Equal(t, "ns/hot", <-entered)
	// While ns/hot is being reconciled, many adds of it must coalesce into one
	// more run, and never reach a second worker.
	for range 50 {
		c.Add("ns/hot")
	}
	c.Add("ns/other")
	require.Equal(t, "ns/other", <-entered, "other keys proceed on other workers")
	close(release)
	require.Equal(t, "ns/hot", <-entered)
	require.Eventually(t, func() bool { return len(metrics.observations()) == 3 }, waitFor, time.Millisecond)
	require.NoError(t, stop())

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 0, overlaps, "a key was reconciled by two workers at once")
	assert.Equal(t, 2, runs["ns/hot"], "adds during a reconcile coalesce into exactly one more run")
	assert.Equal(t, 1, runs["ns/other"])
	assert.Equal(t, 8, metrics.maxWorkers)
}

// fakeInformer is a SharedIndexInformer whose registrations sync when told
// to. Typed (see typed), it is what queue.On binds handlers to.
type fakeInformer struct {
	cache.SharedIndexInformer
	mu       sync.Mutex
	synced   atomic.Bool // the informer's own cache
	regs     []*fakeRegistration
	removed  int
	refuse   error
	handlers []cache.ResourceEventHandler
	// checked, when set, receives a value (if it has room) each time a
	// registration's HasSynced is called.
	checked chan struct{}
}

type fakeRegistration struct {
	cache.ResourceEventHandlerRegistration
	synced  atomic.Bool
	checked chan struct{}
}

func (r *fakeRegistration) HasSynced() bool {
	synced := r.synced.Load()
	if r.checked != nil {
		select {
		case r.checked <- struct{}{}:
		default:
		}
	}
	return synced
}

func (f *fakeInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, _ cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return nil, f.refuse
	}
	r := &fakeRegistration{checked: f.checked}
	f.regs = append(f.regs, r)
	f.handlers = append(f.handlers, h)
	return r, nil
}

func (f *fakeInformer) RemoveEventHandler(reg cache.ResourceEventHandlerRegistration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed++
	return nil
}

func (f *fakeInformer) HasSynced() bool { return f.synced.Load() }

// registrations returns how many handlers were added and removed.
func (f *fakeInformer) registrations() (added, removed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.regs), f.removed
}

// syncAll makes every registration report synced.
func (f *fakeInformer) syncAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.regs {
		r.synced.Store(true)
	}
}

// handler returns the i-th handler registered on f, as the informer holds
// it (untyped).
func (f *fakeInformer) handler(i int) cache.ResourceEventHandler {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handlers[i]
}

// typed returns f as an informer of ConfigMaps, as the TypedInformer
// methods of informer factories do.
func typed(f *fakeInformer) cache.TypedSharedIndexInformer[*corev1.ConfigMap] {
	return cache.NewTypedSharedIndexInformer[*corev1.ConfigMap](f)
}

// noopHandler is a typed handler that does nothing.
var noopHandler = cache.TypedResourceEventHandlerDetailedFuncs[*corev1.ConfigMap]{}

func TestWorkersWaitForWatches(t *testing.T) {
	defer goleak.VerifyNone(t)
	var mu sync.Mutex
	var reconciled []string
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		reconciled = append(reconciled, key)
		return reconcile.Result{}, nil
	})
	calls := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(reconciled)
	}
	c, err := queue.New("sync", r)
	require.NoError(t, err)
	a, b := &fakeInformer{}, &fakeInformer{}
	// A custom typed handler: the informer's events reach it typed.
	enqueue := cache.TypedResourceEventHandlerDetailedFuncs[*corev1.ConfigMap]{
		AddFunc: func(cm *corev1.ConfigMap, _ bool) { c.Add(cm.Namespace + "/" + cm.Name) },
	}
	require.NoError(t, c.Watch(queue.On(typed(a), enqueue)))
	require.NoError(t, c.Watch(queue.On(typed(b), noopHandler)))
	// A call with a refused Watch registers none of its Watches.
	require.ErrorContains(t, c.Watch(queue.On(typed(a), noopHandler), queue.On(typed(b), nil)), "Watch 1 has no informer or no handler")

	// Before Run: nothing is registered, and HasSynced follows the informers.
	added, _ := a.registrations()
	assert.Zero(t, added, "Watch registers nothing before Run")
	assert.False(t, c.HasSynced())
	a.synced.Store(true)
	assert.False(t, c.HasSynced(), "one informer is not synced yet")
	b.synced.Store(true)
	assert.True(t, c.HasSynced(), "warm informers make a controller that is not running ready")

	c.Add("ns/a")
	stop := startController(t, context.Background(), c)
	require.Eventually(t, func() bool {
		added, _ := b.registrations()
		return added == 1
	}, waitFor, time.Millisecond, "Run registers the handlers")
	assert.False(t, c.HasSynced(), "while running, HasSynced follows the registrations")
	a.syncAll()
	require.Never(t, func() bool { return len(calls()) > 0 }, 50*time.Millisecond, time.Millisecond,
		"a worker ran before every registration synced")
	b.syncAll()
	require.Eventually(t, func() bool { return len(calls()) == 1 }, waitFor, time.Millisecond)
	assert.True(t, c.HasSynced())

	// Events of the informer reach the handler bound to it, typed.
	a.handler(0).OnAdd(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "from-informer"}}, false)
	require.Eventually(t, func() bool { return len(calls()) == 2 }, waitFor, time.Millisecond)
	assert.Equal(t, []string{"ns/a", "ns/from-informer"}, calls())

	require.ErrorContains(t, c.Watch(queue.On(typed(a), noopHandler)), "after Run")
	require.NoError(t, stop())
	for _, inf := range []*fakeInformer{a, b} {
		added, removed := inf.registrations()
		assert.Equal(t, 1, added, "one registration per accepted Watch")
		assert.Equal(t, 1, removed, "Run removes its handlers when it returns")
	}
}

// Controller.Watch refuses Watches that cannot work, and then registers
// none of the Watches of the call.
func TestWatchValidation(t *testing.T) {
	list := func(context.Context) ([]string, error) { return nil, nil }
	self := func(k string) []string { return []string{k} }
	tests := []struct {
		name string
		// watch is the Watch refused; c is the controller it is for.
		watch   func(c *queue.Controller[string]) queue.Watch
		wantErr []string
	}{
		{name: "zero Watch", watch: func(*queue.Controller[string]) queue.Watch { return queue.Watch{} },
			wantErr: []string{"has no informer or no handler"}},
		{name: "On without an informer", watch: func(*queue.Controller[string]) queue.Watch {
			return queue.On[*corev1.ConfigMap](nil, noopHandler)
		}, wantErr: []string{"has no informer or no handler"}},
		{name: "On without a handler", watch: func(*queue.Controller[string]) queue.Watch {
			return queue.On(typed(&fakeInformer{}), nil)
		}, wantErr: []string{"has no informer or no handler"}},
		{name: "Periodic without a queue", watch: func(*queue.Controller[string]) queue.Watch {
			return queue.Periodic[string](nil, time.Second, list)
		}, wantErr: []string{"periodic source: queue must not be nil"}},
		{name: "Periodic with a zero interval", watch: func(c *queue.Controller[string]) queue.Watch {
			return queue.Periodic(c, 0, list)
		}, wantErr: []string{"periodic source: interval must be positive, got 0s"}},
		{name: "Periodic with a negative interval", watch: func(c *queue.Controller[string]) queue.Watch {
			return queue.Periodic(c, -time.Second, list)
		}, wantErr: []string{"periodic source: interval must be positive, got -1s"}},
		{name: "Periodic without a list function", watch: func(c *queue.Controller[string]) queue.Watch {
			return queue.Periodic(c, time.Second, nil)
		}, wantErr: []string{"periodic source: list function must not be nil"}},
		{name: "Periodic with a jitter above 1", watch: func(c *queue.Controller[string]) queue.Watch {
			return queue.Periodic(c, time.Second, list, queue.Jitter(2))
		}, wantErr: []string{"periodic source: jitter must be between 0 and 1, got 2"}},
		{name: "Periodic with a negative jitter", watch: func(c *queue.Controller[string]) queue.Watch {
			return queue.Periodic(c, time.Second, list, queue.Jitter(-0.5))
		}, wantErr: []string{"periodic source: jitter must be between 0 and 1, got -0.5"}},
		{name: "Periodic reports every problem", watch: func(*queue.Controller[string]) queue.Watch {
			return queue.Periodic[string](nil, 0, nil, queue.Jitter(3))
		}, wantErr: []string{"queue must not be nil", "interval must be positive", "list function must not be nil", "jitter must be between 0 and 1"}},
		{name: "Channel without a queue", watch: func(*queue.Controller[string]) queue.Watch {
			return queue.Channel[string, string](nil, make(chan string), self)
		}, wantErr: []string{"channel source: queue must not be nil"}},
		{name: "Channel without a channel", watch: func(c *queue.Controller[string]) queue.Watch {
			return queue.Channel[string](c, nil, self)
		}, wantErr: []string{"channel source: channel must not be nil"}},
		{name: "Channel without a keys function", watch: func(c *queue.Controller[string]) queue.Watch {
			return queue.Channel[string, string](c, make(chan string), nil)
		}, wantErr: []string{"channel source: keys function must not be nil"}},
		{name: "Channel reports every problem", watch: func(*queue.Controller[string]) queue.Watch {
			return queue.Channel[string, string](nil, nil, nil)
		}, wantErr: []string{"queue must not be nil", "channel must not be nil", "keys function must not be nil"}},
		{name: "Feed without a function", watch: func(*queue.Controller[string]) queue.Watch { return queue.Feed(nil) },
			wantErr: []string{"feed function must not be nil"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := queue.New("x", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
				return reconcile.Result{}, nil
			}))
			require.NoError(t, err)
			var refused, kept atomic.Bool
			err = c.Watch(queue.Feed(func(context.Context) { refused.Store(true) }), tt.watch(c))
			require.Error(t, err)
			assert.Contains(t, err.Error(), `queue: controller "x": Watch 1`, "the error names the controller and the Watch")
			for _, want := range tt.wantErr {
				assert.Contains(t, err.Error(), want)
			}
			// Run starts every Watch it has and waits for it before
			// returning: the valid Watch of the refused call never ran,
			// while one of a later call did.
			require.NoError(t, c.Watch(queue.Feed(func(context.Context) { kept.Store(true) })))
			require.NoError(t, startController(t, context.Background(), c)())
			assert.True(t, kept.Load(), "the Watch of an accepted call was started")
			assert.False(t, refused.Load(), "a Watch of a refused call was started")
		})
	}
}

// Valid Watches of every kind are accepted, also several in one call (and
// none), at the bounds of what Periodic takes; nil SourceOptions are
// ignored.
func TestWatchAcceptsValidWatches(t *testing.T) {
	c, err := queue.New("x", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}))
	require.NoError(t, err)
	list := func(context.Context) ([]string, error) { return nil, nil }
	require.NoError(t, c.Watch())
	require.NoError(t, c.Watch(
		queue.On(typed(&fakeInformer{}), noopHandler),
		queue.Periodic(c, time.Nanosecond, list, queue.Jitter(0)),
		queue.Periodic(c, time.Second, list, queue.Jitter(1), queue.LowPriority(), queue.AtStart(), nil),
		queue.Channel(c, make(chan int), func(int) []string { return nil }, nil),
		queue.Feed(func(context.Context) {}),
	))
}

func TestWatchRegistrationFails(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	})
	c, err := queue.New("refused", r)
	require.NoError(t, err)
	ok, refusing := &fakeInformer{}, &fakeInformer{refuse: errors.New("informer stopped")}
	require.NoError(t, c.Watch(queue.On(typed(ok), noopHandler), queue.On(typed(refusing), noopHandler)))
	err = c.Run(context.Background())
	require.ErrorContains(t, err, "registering handler 1: informer stopped")
	added, removed := ok.registrations()
	assert.Equal(t, 1, added)
	assert.Equal(t, 1, removed, "handlers registered before the failure are removed")
}

// New starts nothing and registers nothing: a controller that is never run
// needs no cleanup.
func TestNeverRunNeedsNoCleanup(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	})
	inf := &fakeInformer{}
	c, err := queue.New("abandoned", r, queue.WithMetrics(&fakeMetrics{}))
	require.NoError(t, err)
	var listed atomic.Bool
	require.NoError(t, c.Watch(
		queue.On(typed(inf), noopHandler),
		queue.Periodic(c, time.Millisecond, func(context.Context) ([]string, error) { listed.Store(true); return nil, nil }, queue.AtStart()),
	))
	c.Add("a")
	c.AddAfter("b", time.Hour)
	added, _ := inf.registrations()
	assert.Zero(t, added)
	assert.False(t, listed.Load(), "a Periodic Watch runs only while the controller runs")
}

func TestCancelledBeforeSync(t *testing.T) {
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		t.Error("reconciled although caches never synced")
		return reconcile.Result{}, nil
	})
	c, err := queue.New("never-synced", r)
	require.NoError(t, err)
	require.NoError(t, c.Watch(queue.On(typed(&fakeInformer{}), noopHandler)))
	c.Add("ns/a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = c.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "before its caches synced")
	goleak.VerifyNone(t)
}

// A stop that comes after the handlers synced, while Run has not yet seen
// them synced, is a normal shutdown: Run returns nil, as it does once the
// workers run, and no reconcile starts after the stop.
func TestCancelledAfterSyncBeforeWorkers(t *testing.T) {
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		t.Error("reconciled after the stop")
		return reconcile.Result{}, nil
	})
	c, err := queue.New("synced-then-stopped", r)
	require.NoError(t, err)
	inf := &fakeInformer{checked: make(chan struct{}, 1)}
	require.NoError(t, c.Watch(queue.On(typed(inf), noopHandler)))
	c.Add("ns/a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	select {
	case <-inf.checked: // Run looked once and found the handler not synced
	case <-time.After(30 * time.Second):
		t.Fatal("Run never checked whether its handler synced")
	}
	inf.syncAll()
	require.True(t, c.HasSynced())
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err, "the handlers had synced before the stop")
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after the stop")
	}
	goleak.VerifyNone(t)
}

func TestShutdownLetsInFlightReconcilesFinish(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var (
		finished   atomic.Bool
		ctxErrSeen atomic.Value
		calls      atomic.Int32
	)
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		if calls.Add(1) > 1 {
			t.Errorf("key %s was taken after shutdown began", key)
			return reconcile.Result{}, nil
		}
		close(entered)
		<-release
		ctxErrSeen.Store(fmt.Sprint(ctx.Err()))
		finished.Store(true)
		return reconcile.Result{}, nil
	})
	c, err := queue.New("graceful", r, queue.WithShutdownTimeout(time.Minute))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	c.Add("ns/a")
	<-entered
	c.Add("ns/b") // queued behind the single busy worker; must not start after cancel
	cancel()
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while a reconcile was still running", err)
	default:
	}
	close(release)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Run did not return after the in-flight reconcile finished")
	}
	assert.True(t, finished.Load())
	assert.Equal(t, "<nil>", ctxErrSeen.Load(), "the in-flight reconcile's context was cancelled during the grace period")
	assert.Equal(t, int32(1), calls.Load())
	goleak.VerifyNone(t)
}

func TestShutdownTimeout(t *testing.T) {
	tests := []struct {
		name      string
		honourCtx bool
		wantErr   error
	}{
		{name: "reconcile honours its context", honourCtx: true},
		{name: "reconcile ignores its context", wantErr: queue.ErrShutdownTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entered := make(chan struct{})
			stuck := make(chan struct{})
			returned := make(chan struct{})
			r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
				defer close(returned)
				close(entered)
				if tt.honourCtx {
					<-ctx.Done()
					return reconcile.Result{}, ctx.Err()
				}
				<-stuck
				return reconcile.Result{}, nil
			})
			c, err := queue.New("timeout", r, queue.WithShutdownTimeout(20*time.Millisecond))
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			c.Add("ns/a")
			<-entered
			cancel()
			select {
			case err := <-done:
				if tt.wantErr != nil {
					require.ErrorIs(t, err, tt.wantErr)
				} else {
					require.NoError(t, err)
				}
			case <-time.After(waitFor):
				t.Fatal("Run did not return")
			}
			close(stuck)
			<-returned
			// The abandoned worker returns once its reconcile does. goleak's
			// own retries give it time; Eventually would count its own goroutines.
			goleak.VerifyNone(t)
		})
	}
}

// A reconcile whose own deadline fired counts as timed out whatever it
// returned, as in controller-runtime.
func TestReconcileTimeout(t *testing.T) {
	tests := []struct {
		name string
		// after the deadline fired, the first reconcile returns this
		result  func(ctx context.Context) (reconcile.Result, error)
		outcome queue.Outcome
	}{
		{name: "error", outcome: queue.OutcomeError, result: func(ctx context.Context) (reconcile.Result, error) {
			return reconcile.Result{}, fmt.Errorf("waiting for the API: %w", ctx.Err())
		}},
		{name: "success", outcome: queue.OutcomeSuccess, result: func(context.Context) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}},
		{name: "requeue after", outcome: queue.OutcomeRequeueAfter, result: func(context.Context) (reconcile.Result, error) {
			return reconcile.Result{RequeueAfter: time.Millisecond}, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
				if calls.Add(1) == 1 {
					<-ctx.Done()
					return tt.result(ctx)
				}
				if _, hasDeadline := ctx.Deadline(); !hasDeadline {
					return reconcile.Result{}, errors.New("no deadline on the reconcile context")
				}
				return reconcile.Result{}, nil
			})
			metrics := &fakeMetrics{}
			c, err := queue.New("reconcile-timeout", r, queue.WithReconcileTimeout(10*time.Millisecond), queue.WithMetrics(metrics), queue.WithRateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[any](time.Millisecond, time.Millisecond)))
			require.NoError(t, err)
			stop := startController(t, context.Background(), c)
			c.Add("ns/a")
			if tt.outcome != queue.OutcomeError && tt.outcome != queue.OutcomeRequeueAfter {
				require.Eventually(t, func() bool { return len(metrics.observations()) == 1 }, waitFor, time.Millisecond)
				c.Add("ns/a")
			}
			require.Eventually(t, func() bool { return len(metrics.observations()) == 2 }, waitFor, time.Millisecond)
			require.NoError(t, stop())
			obs := metrics.observations()
			assert.True(t, obs[0].TimedOut)
			assert.Equal(t, tt.outcome, obs[0].Outcome)
			assert.GreaterOrEqual(t, obs[0].Duration, 10*time.Millisecond)
			assert.Equal(t, queue.OutcomeSuccess, obs[1].Outcome)
			assert.False(t, obs[1].TimedOut)
		})
	}
}

// A reconcile cancelled by the shutdown did not fail: it is neither logged
// as an error nor counted.
func TestReconcileCancelledByShutdown(t *testing.T) {
	entered := make(chan struct{})
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		close(entered)
		<-ctx.Done()
		return reconcile.Result{}, fmt.Errorf("writing: %w", ctx.Err())
	})
	metrics := &fakeMetrics{}
	logs := &logBuffer{}
	c, err := queue.New("cancelled", r, queue.WithShutdownTimeout(10*time.Millisecond), queue.WithMetrics(metrics))
	require.NoError(t, err)
	stop := startController(t, logs.context(), c)
	c.Add("ns/a")
	<-entered
	require.NoError(t, stop())
	assert.Empty(t, metrics.observations(), "no reconcile result is counted")
	assert.False(t, logs.hasError("ns/a"), "no error-level log line:\n%s", logs.String())
	assert.Contains(t, logs.String(), "Reconcile cancelled by the shutdown")
}

func TestContextualLogger(t *testing.T) {
	type ctxKey struct{}
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		klog.FromContext(ctx).Info("inside reconcile")
		// Contexts derived inside Reconcile keep the logger; slog sees it too.
		child, cancel := context.WithCancel(context.WithValue(ctx, ctxKey{}, "v"))
		defer cancel()
		klog.FromContext(child).Info("from a derived context")
		if logr.FromContextAsSlogLogger(child) == nil {
			return reconcile.Result{}, errors.New("no slog logger in the reconcile context")
		}
		if child.Value(ctxKey{}) != "v" {
			return reconcile.Result{}, errors.New("derived value lost")
		}
		// A logger set by the reconciler itself takes precedence.
		klog.FromContext(klog.NewContext(ctx, klog.FromContext(ctx).WithName("sub"))).Info("renamed")
		return reconcile.Result{}, nil
	})
	metrics := &fakeMetrics{}
	logs := &logBuffer{}
	c, err := queue.New("logging", r, queue.WithMetrics(metrics), queue.WithWorkers(2))
	require.NoError(t, err)
	stop := startController(t, logs.context(), c)
	c.Add("ns/a")
	c.Add("ns/b")
	require.Eventually(t, func() bool { return len(metrics.observations()) == 2 }, waitFor, time.Millisecond)
	require.NoError(t, stop())

	var ids []string
	idPattern := regexp.MustCompile(`"reconcileID"=(\S+)`)
	for _, line := range logs.lines() {
		if !strings.Contains(line, `"msg"="inside reconcile"`) {
			continue
		}
		assert.Contains(t, line, `"controller"="logging"`)
		assert.Regexp(t, `"key"="ns/[ab]"`, line)
		m := idPattern.FindStringSubmatch(line)
		require.Len(t, m, 2, line)
		ids = append(ids, m[1])
	}
	require.Len(t, ids, 2)
	assert.NotEqual(t, ids[0], ids[1], "each reconcile gets its own ID")
	assert.Equal(t, 2, strings.Count(logs.String(), `"msg"="from a derived context" "controller"="logging" "key"="ns/`))
	assert.Equal(t, 2, strings.Count(logs.String(), `"msg"="renamed" "controller"="logging" "key"="ns/`))
	assert.NotContains(t, logs.String(), `"error"=`)
}

func TestNewValidation(t *testing.T) {
	r := reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) { return reconcile.Result{}, nil })
	tests := []struct {
		name    string
		ctrl    string
		r       reconcile.Reconciler[string]
		opts    []queue.Option
		wantErr string
	}{
		{name: "empty name", r: r, wantErr: "name must not be empty"},
		{name: "nil reconciler", ctrl: "x", wantErr: "reconciler must not be nil"},
		{name: "zero workers", ctrl: "x", r: r, opts: []queue.Option{queue.WithWorkers(0)}, wantErr: "workers must be at least 1"},
		{name: "negative reconcile timeout", ctrl: "x", r: r, opts: []queue.Option{queue.WithReconcileTimeout(-time.Second)}, wantErr: "reconcile timeout must be positive"},
		{name: "zero shutdown timeout", ctrl: "x", r: r, opts: []queue.Option{queue.WithShutdownTimeout(0)}, wantErr: "shutdown timeout must be positive"},
		{name: "nil metrics", ctrl: "x", r: r, opts: []queue.Option{queue.WithMetrics(nil)}, wantErr: "metrics are nil"},
		{name: "nil clock", ctrl: "x", r: r, opts: []queue.Option{queue.WithClock(nil)}, wantErr: "clock is nil"},
		{name: "nil rate limiter", ctrl: "x", r: r, opts: []queue.Option{queue.WithRateLimiter(nil)}, wantErr: "rate limiter is nil"},
		{name: "nil fairness", ctrl: "x", r: r, opts: []queue.Option{queue.WithFairness[string](nil)}, wantErr: "fairness group function is nil"},
		{name: "fairness of another key type", ctrl: "x", r: r, opts: []queue.Option{queue.WithFairness(func(int) string { return "" })},
			wantErr: "fairness groups keys of type func(int) string, not the controller's string"},
		{name: "every problem is reported", ctrl: "x", r: r, opts: []queue.Option{queue.WithWorkers(-1), queue.WithShutdownTimeout(-1), queue.WithRateLimiter(nil)},
			wantErr: "workers must be at least 1, got -1\nshutdown timeout must be positive, got -1ns\nrate limiter is nil"},
		{name: "the name is in the error", ctrl: "x", r: r, opts: []queue.Option{queue.WithWorkers(0)}, wantErr: `queue: controller "x": `},
		{name: "defaults", ctrl: "x", r: r, opts: []queue.Option{nil}},
		{name: "all options", ctrl: "x", r: r, opts: []queue.Option{queue.WithWorkers(3), queue.WithReconcileTimeout(time.Second),
			queue.WithShutdownTimeout(time.Second), queue.WithMetrics(&fakeMetrics{}), queue.WithRateLimiter(queue.DefaultRateLimiter[any]()),
			queue.WithFairness(func(k string) string { return k[:1] })}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := queue.New(tt.ctrl, tt.r, tt.opts...)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Nil(t, c)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.ctrl, c.Name())
		})
	}
}

func TestRunTwice(t *testing.T) {
	r := reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) { return reconcile.Result{}, nil })
	metrics := &fakeMetrics{}
	c, err := queue.New("twice", r, queue.WithMetrics(metrics))
	require.NoError(t, err)
	stop := startController(t, context.Background(), c)
	c.Add("a")
	require.Eventually(t, func() bool { return len(metrics.observations()) == 1 }, waitFor, time.Millisecond)
	err = c.Run(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already started")
	require.NoError(t, stop())
	c.Add("after")
	assert.Zero(t, c.Len(), "keys added after Run returned are ignored")
}

func TestDefaultRateLimiter(t *testing.T) {
	rl := queue.DefaultRateLimiter[string]()
	// Per-key exponential backoff: 5ms, 10ms, 20ms ... for one key, while
	// another key starts again at the base delay.
	assert.Equal(t, 5*time.Millisecond, rl.When("a"))
	assert.Equal(t, 10*time.Millisecond, rl.When("a"))
	assert.Equal(t, 20*time.Millisecond, rl.When("a"))
	assert.Equal(t, 5*time.Millisecond, rl.When("b"))
	assert.Equal(t, 3, rl.NumRequeues("a"))
	rl.Forget("a")
	assert.Equal(t, 0, rl.NumRequeues("a"))
	assert.Equal(t, 5*time.Millisecond, rl.When("a"))
	// The cap is reached after enough failures.
	for range 40 {
		rl.When("c")
	}
	assert.Equal(t, queue.DefaultMaxDelay, rl.When("c"))
	// The shared bucket: once the burst is spent, fresh keys wait for a token.
	rl2 := queue.DefaultRateLimiter[string]()
	for i := range queue.DefaultRetryBurst {
		rl2.When(fmt.Sprint("k", i))
	}
	assert.Greater(t, rl2.When("fresh"), queue.DefaultBaseDelay, "retries beyond the burst are limited by the shared bucket")
}

func TestAddAfterAndLen(t *testing.T) {
	r := &keyCounter{}
	c, err := queue.New("len", r)
	require.NoError(t, err)
	c.Add("a")
	c.Add("a")
	c.Add("b")
	assert.Equal(t, 2, c.Len(), "duplicate adds of a waiting key are merged")
	c.AddAfter("now", 0)
	c.AddAfter("later", time.Millisecond)
	c.AddAfter("later", time.Hour) // the earlier time counts
	assert.Equal(t, 3, c.Len(), "a delayed key waits for Run")
	stop := startController(t, context.Background(), c)
	require.Eventually(t, func() bool {
		return c.Len() == 0 && c.Active() == 0 && r.count("later") == 1 && r.count("a") == 1
	}, waitFor, time.Millisecond)
	c.AddAfter("running", time.Millisecond)
	require.Eventually(t, func() bool { return r.count("running") == 1 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
}

// logBuffer collects log lines written through a funcr logger.
type logBuffer struct {
	mu  sync.Mutex
	buf []string
}

func (l *logBuffer) context() context.Context {
	logger := funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.buf = append(l.buf, args)
	}, funcr.Options{Verbosity: 10})
	return logr.NewContext(context.Background(), logger)
}

func (l *logBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.buf...)
}

func (l *logBuffer) String() string { return strings.Join(l.lines(), "\n") }

// hasError reports whether an error-level line was logged for key.
func (l *logBuffer) hasError(key string) bool {
	for _, line := range l.lines() {
		if strings.Contains(line, `"error"=`) && strings.Contains(line, `"key"="`+key+`"`) {
			return true
		}
	}
	return false
}

func TestFreshKeysOvertakeLowPriorityKeys(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var order []string
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		if key == "block" {
			<-release
			return reconcile.Result{}, nil
		}
		mu.Lock()
		order = append(order, key)
		mu.Unlock()
		return reconcile.Result{}, nil
	})
	metrics := &fakeMetrics{}
	c, err := queue.New("lanes", r, queue.WithMetrics(metrics))
	require.NoError(t, err)
	stop := startController(t, context.Background(), c)
	c.Add("block")
	require.Eventually(t, func() bool { return c.Len() == 0 }, waitFor, time.Millisecond, "the worker took the blocking key")
	for i := range 20 {
		c.AddLowPriority(fmt.Sprintf("initial-%02d", i))
	}
	c.Add("fresh-1")
	c.AddLowPriority("initial-05") // already waiting: stays where it is
	c.Add("initial-10")            // a fresh change of a waiting key moves it ahead
	c.Add("fresh-2")
	close(release)
	require.Eventually(t, func() bool { return len(metrics.observations()) == 23 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, order, 22)
	assert.Equal(t, []string{"fresh-1", "initial-10", "fresh-2"}, order[:3])
	assert.Equal(t, "initial-00", order[3])
	assert.NotContains(t, order[4:], "initial-10")
}

// With a logger that discards everything, reconciles get no per-key logger,
// and every outcome is still handled.
func TestDiscardLogger(t *testing.T) {
	var calls atomic.Int32
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		klog.FromContext(ctx).Info("not shown")
		switch calls.Add(1) {
		case 1:
			return reconcile.Result{}, errors.New("boom")
		case 2:
			panic("bad")
		case 3:
			return reconcile.Result{}, apierrors.NewConflict(schema.GroupResource{Resource: "foos"}, "a", errors.New("stale"))
		default:
			return reconcile.Result{}, reconcile.Terminal(errors.New("invalid"))
		}
	})
	metrics := &fakeMetrics{}
	c, err := queue.New("discard", r, queue.WithMetrics(metrics), queue.WithRateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[any](time.Millisecond, time.Millisecond)))
	require.NoError(t, err)
	stop := startController(t, logr.NewContext(context.Background(), logr.Discard()), c)
	c.Add("ns/a")
	require.Eventually(t, func() bool { return len(metrics.observations()) == 4 }, waitFor, time.Millisecond)
	require.NoError(t, stop())
	obs := metrics.observations()
	assert.True(t, obs[1].Panicked)
	assert.True(t, obs[3].Terminal)
}

func TestAbort(t *testing.T) {
	lost := errors.New("lost the Lease")
	tests := []struct {
		name string
		// stop stops the controller once a reconcile is blocked.
		stop func(c *queue.Controller[string], cancel context.CancelFunc)
	}{
		{name: "abort while running", stop: func(c *queue.Controller[string], _ context.CancelFunc) { c.Abort(lost) }},
		{name: "abort during a graceful stop", stop: func(c *queue.Controller[string], cancel context.CancelFunc) {
			cancel()
			c.Abort(lost)
			c.Abort(errors.New("second cause is ignored"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			entered := make(chan struct{})
			var cause atomic.Value
			r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
				close(entered)
				<-ctx.Done()
				cause.Store(context.Cause(ctx))
				return reconcile.Result{}, ctx.Err()
			})
			// A long grace period: only the abort can end the reconcile.
			c, err := queue.New("abort", r, queue.WithShutdownTimeout(time.Hour))
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			c.Add("a")
			<-entered
			tt.stop(c, cancel)
			select {
			case err := <-done:
				require.ErrorIs(t, err, queue.ErrAborted)
				require.ErrorIs(t, err, lost)
			case <-time.After(waitFor):
				t.Fatal("Run did not return after Abort")
			}
			got, _ := cause.Load().(error)
			assert.ErrorIs(t, got, lost, "the reconcile's context carries the cause")
		})
	}
	t.Run("abort before Run", func(t *testing.T) {
		defer goleak.VerifyNone(t)
		c, err := queue.New("abort", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
			t.Error("reconciled after Abort")
			return reconcile.Result{}, nil
		}))
		require.NoError(t, err)
		c.Add("a")
		c.Abort(lost)
		require.ErrorIs(t, c.Run(context.Background()), lost)
	})
}

func TestSourcePriorities(t *testing.T) {
	// The worker is held on "block" while the sources fill both lanes;
	// the fresh key then overtakes the low-priority ones.
	release := make(chan struct{})
	var mu sync.Mutex
	var order []string
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		if key == "block" {
			<-release
		}
		mu.Lock()
		order = append(order, key)
		mu.Unlock()
		return reconcile.Result{}, nil
	})
	low := make(chan []string, 1)
	fresh := make(chan []string, 1)
	self := func(keys []string) []string { return keys }
	c, err := queue.New("priorities", r)
	require.NoError(t, err)
	require.NoError(t, c.Watch(queue.Channel(c, low, self, queue.LowPriority()), queue.Channel(c, fresh, self)))
	c.Add("block")
	stop := startController(t, context.Background(), c)
	require.Eventually(t, func() bool { return c.Active() == 1 }, waitFor, time.Millisecond)
	low <- []string{"resync-1", "resync-2"}
	require.Eventually(t, func() bool { return c.Len() == 2 }, waitFor, time.Millisecond)
	fresh <- []string{"change"}
	require.Eventually(t, func() bool { return c.Len() == 3 }, waitFor, time.Millisecond)
	close(release)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 4
	}, waitFor, time.Millisecond)
	require.NoError(t, stop())
	assert.Equal(t, []string{"block", "change", "resync-1", "resync-2"}, order)
}

// A key whose reconciles keep ending with the same terminal error (a
// periodic recheck of an invalid object) logs it at error level once; a
// different terminal error, or the same one after a reconcile that ended
// otherwise, is logged again. Every one is counted.
func TestSameTerminalErrorLoggedOnce(t *testing.T) {
	results := []error{
		reconcile.Terminal(errors.New("invalid spec (generation 1)")),
		reconcile.Terminal(errors.New("invalid spec (generation 1)")),
		fmt.Errorf("%w", reconcile.ErrStaleCache), // says nothing of the object
		reconcile.Terminal(errors.New("invalid spec (generation 1)")),
		reconcile.Terminal(errors.New("invalid spec (generation 2)")),
		nil,
		reconcile.Terminal(errors.New("invalid spec (generation 2)")),
		&reconcile.TerminalError{Err: errors.New("invalid spec"), Generation: 3},
		&reconcile.TerminalError{Err: errors.New("invalid spec"), Generation: 3},
		&reconcile.TerminalError{Err: errors.New("invalid spec"), Generation: 4},
		fmt.Errorf("wrapped: %w", &reconcile.TerminalError{Err: errors.New("invalid spec"), Generation: 4}),
	}
	var calls atomic.Int32
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		return reconcile.Result{}, results[calls.Add(1)-1]
	})
	metrics := &fakeMetrics{}
	logs := &logBuffer{}
	c, err := queue.New("terminal", r, queue.WithMetrics(metrics))
	require.NoError(t, err)
	stop := startController(t, logs.context(), c)
	for i := range results {
		if i == 0 || !errors.Is(results[i-1], reconcile.ErrStaleCache) { // a stale cache is retried by itself
			c.Add("ns/a")
		}
		// At least: the retry after a stale cache comes by itself, and may
		// have come before a poll saw the reconcile before it end.
		require.Eventually(t, func() bool { return int(calls.Load()) >= i+1 && len(metrics.observations()) >= i+1 },
			waitFor, time.Millisecond, "reconcile %d", i+1)
	}
	require.NoError(t, stop())

	var errorLines []string
	for _, line := range logs.lines() {
		if strings.Contains(line, `"error"=`) {
			errorLines = append(errorLines, line)
		}
	}
	require.Len(t, errorLines, 6, "error-level lines:\n%s", strings.Join(errorLines, "\n"))
	assert.Contains(t, errorLines[0], "generation 1")
	assert.Contains(t, errorLines[1], "generation 2")
	assert.Contains(t, errorLines[2], "generation 2", "logged again after a reconcile that succeeded")
	assert.Contains(t, errorLines[3], `"terminal error: invalid spec" "controller"="terminal" "key"="ns/a" "reconcileID"=8`, "a Generation the text does not name")
	assert.Contains(t, errorLines[4], `"terminal error: invalid spec" "controller"="terminal" "key"="ns/a" "reconcileID"=10`, "the same text of a new generation")
	assert.Contains(t, errorLines[5], "wrapped", "another text, the same generation")
	assert.Equal(t, 3, strings.Count(logs.String(), "the same terminal error again"), "the repeats are logged quietly")
	terminal := 0
	for _, o := range metrics.observations() {
		if o.Terminal {
			terminal++
		}
	}
	assert.Equal(t, 9, terminal, "every terminal error is counted")
}

// NextDue reports the earliest key waiting on the controller's clock, also
// before Run: an AddAfter then waits by the clock of WithClock too.
func TestNextDueBeforeAndAfterRun(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	c, err := queue.New("due", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}), queue.WithClock(clk))
	require.NoError(t, err)
	_, ok := c.NextDue()
	assert.False(t, ok)
	c.AddAfter("b", 2*time.Minute)
	c.AddAfter("a", time.Minute)
	due, ok := c.NextDue()
	require.True(t, ok)
	assert.Equal(t, start.Add(time.Minute), due)

	stop := startController(t, context.Background(), c)
	defer func() { require.NoError(t, stop()) }()
	require.Eventually(t, func() bool { due, ok := c.NextDue(); return ok && due.Equal(start.Add(time.Minute)) }, waitFor, time.Millisecond,
		"the delays waiting since before Run keep their due times")
	clk.Step(90 * time.Second)
	require.Eventually(t, func() bool { due, ok := c.NextDue(); return ok && due.Equal(start.Add(2*time.Minute)) }, waitFor, time.Millisecond,
		"a is added once due; b still waits")
}
