package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// keyTable holds the same keys in the shape each library uses: ctrlkit and
// the hand-written loop queue cache.ObjectName (as sample-controller does),
// controller-runtime queues reconcile.Request. Both are a namespace and a
// name, so every peer moves keys of the same size.
type keyTable struct {
	names []string
	objs  []cache.ObjectName
	reqs  []crreconcile.Request
}

func newKeyTable(names []string) *keyTable {
	t := &keyTable{names: names, objs: make([]cache.ObjectName, len(names)), reqs: make([]crreconcile.Request, len(names))}
	for i, n := range names {
		t.objs[i] = cache.NewObjectName("default", n)
		t.reqs[i].Namespace, t.reqs[i].Name = "default", n
	}
	return t
}

// keyNames returns n distinct object names with the given prefix.
func keyNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return names
}

// reconcileFunc is the work every peer does for one key: it gets the key's
// name and must return only when the simulated work is done.
type reconcileFunc func(name string)

// peer is one worker-loop implementation under benchmark.
type peer interface {
	// start starts the workers; stop stops them and waits for every
	// goroutine the peer started.
	start(ctx context.Context, tb testing.TB) (stop func())
	// add enqueues key i as a fresh change.
	add(i int)
	// addLow enqueues key i as an event without a change (initial list,
	// resync), at low priority where the peer has a notion of it.
	addLow(i int)
}

// peerKind names a peer in benchmark names and builds it.
type peerKind struct {
	name string
	new  func(tb testing.TB, keys *keyTable, workers int, fn reconcileFunc) peer
}

var (
	handwrittenPeer = peerKind{"handwritten", func(_ testing.TB, keys *keyTable, workers int, fn reconcileFunc) peer {
		return newHandPeer(keys, workers, nil, fn)
	}}
	handwrittenNoopProviderPeer = peerKind{"handwritten-noop-provider", func(_ testing.TB, keys *keyTable, workers int, fn reconcileFunc) peer {
		return newHandPeer(keys, workers, queue.NoopMetrics{}, fn)
	}}
	ctrlkitPeer = peerKind{"ctrlkit", func(tb testing.TB, keys *keyTable, workers int, fn reconcileFunc) peer {
		return newCtrlkitPeer(tb, keys, workers, nil, fn)
	}}
	ctrlkitPrometheusPeer = peerKind{"ctrlkit-prometheus", func(tb testing.TB, keys *keyTable, workers int, fn reconcileFunc) peer {
		rec, err := metrics.New(prometheus.NewRegistry())
		if err != nil {
			tb.Fatal(err)
		}
		return newCtrlkitPeer(tb, keys, workers, rec, fn)
	}}
	controllerRuntimePeer = peerKind{"controller-runtime", func(tb testing.TB, keys *keyTable, workers int, fn reconcileFunc) peer {
		return newCRPeer(tb, keys, workers, nil, fn)
	}}
	controllerRuntimeWorkqueuePeer = peerKind{"controller-runtime-workqueue", func(tb testing.TB, keys *keyTable, workers int, fn reconcileFunc) peer {
		return newCRPeer(tb, keys, workers, ptr.To(false), fn)
	}}
)

// ctrlkitPeerImpl drives queue.Controller.
type ctrlkitPeerImpl struct {
	ctrl *queue.Controller[cache.ObjectName]
	keys *keyTable
}

func newCtrlkitPeer(tb testing.TB, keys *keyTable, workers int, m queue.Metrics, fn reconcileFunc) *ctrlkitPeerImpl {
	r := reconcile.Func[cache.ObjectName](func(_ context.Context, key cache.ObjectName) (reconcile.Result, error) {
		fn(key.Name)
		return reconcile.Result{}, nil
	})
	opts := []queue.Option{queue.WithWorkers(workers)}
	if m != nil {
		opts = append(opts, queue.WithMetrics(m))
	}
	ctrl, err := queue.New("bench-ctrlkit", r, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return &ctrlkitPeerImpl{ctrl: ctrl, keys: keys}
}

func (p *ctrlkitPeerImpl) add(i int)    { p.ctrl.Add(p.keys.objs[i]) }
func (p *ctrlkitPeerImpl) addLow(i int) { p.ctrl.AddLowPriority(p.keys.objs[i]) }

func (p *ctrlkitPeerImpl) start(ctx context.Context, tb testing.TB) func() {
	ctx, cancel := context.WithCancel(logr.NewContext(ctx, logr.Discard()))
	done := make(chan error, 1)
	go func() { done <- p.ctrl.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			tb.Error(err)
		}
	}
}

// handPeerImpl is a worker loop written directly against client-go's rate
// limiting workqueue, shaped like sample-controller's runWorker and
// processNextWorkItem. It has no notion of priority.
type handPeerImpl struct {
	queue   workqueue.TypedRateLimitingInterface[cache.ObjectName]
	keys    *keyTable
	workers int
	sync    func(ctx context.Context, key cache.ObjectName) error
}

// newHandPeer builds the loop. With a nil provider the queue behaves as in
// a program without controller-runtime, where the process-wide metrics
// provider is client-go's no-op one and the queue keeps no per-item
// timestamps; controller-runtime replaces that provider in this test
// binary, so the queue gets no name, which selects the same path. With a
// provider, the queue is named and keeps the timestamps its metrics need,
// whatever the provider does with them.
func newHandPeer(keys *keyTable, workers int, provider workqueue.MetricsProvider, fn reconcileFunc) *handPeerImpl {
	cfg := workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{}
	if provider != nil {
		cfg.Name, cfg.MetricsProvider = "bench-hand", provider
	}
	return &handPeerImpl{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](), cfg),
		keys:    keys,
		workers: workers,
		sync: func(_ context.Context, key cache.ObjectName) error {
			fn(key.Name)
			return nil
		},
	}
}

func (p *handPeerImpl) add(i int)    { p.queue.Add(p.keys.objs[i]) }
func (p *handPeerImpl) addLow(i int) { p.queue.Add(p.keys.objs[i]) }

func (p *handPeerImpl) start(ctx context.Context, _ testing.TB) func() {
	var wg sync.WaitGroup
	for range p.workers {
		wg.Go(func() {
			for p.processNextWorkItem(ctx) {
			}
		})
	}
	return func() { p.queue.ShutDown(); wg.Wait() }
}

func (p *handPeerImpl) processNextWorkItem(ctx context.Context) bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	if err := p.sync(ctx, key); err != nil {
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// crPeerImpl drives a controller-runtime controller built with the public
// NewTypedUnmanaged. A source.TypedFunc hands the controller's own queue to
// the benchmark, which then adds keys the way controller-runtime's event
// handlers do, without an API server or informer in between.
type crPeerImpl struct {
	ctrl   controller.TypedController[crreconcile.Request]
	keys   *keyTable
	queues chan workqueue.TypedRateLimitingInterface[crreconcile.Request]

	q  workqueue.TypedRateLimitingInterface[crreconcile.Request]
	pq priorityqueue.PriorityQueue[crreconcile.Request] // nil without the priority queue
}

// newCRPeer builds the controller; usePriorityQueue nil keeps
// controller-runtime's default (the priority queue in v0.25).
func newCRPeer(tb testing.TB, keys *keyTable, workers int, usePriorityQueue *bool, fn reconcileFunc) *crPeerImpl {
	r := crreconcile.TypedFunc[crreconcile.Request](func(_ context.Context, req crreconcile.Request) (crreconcile.Result, error) {
		fn(req.Name)
		return crreconcile.Result{}, nil
	})
	ctrl, err := controller.NewTypedUnmanaged("bench-cr", controller.TypedOptions[crreconcile.Request]{
		Reconciler:              r,
		MaxConcurrentReconciles: workers,
		SkipNameValidation:      ptr.To(true),
		Logger:                  logr.Discard(),
		UsePriorityQueue:        usePriorityQueue,
	})
	if err != nil {
		tb.Fatal(err)
	}
	p := &crPeerImpl{ctrl: ctrl, keys: keys, queues: make(chan workqueue.TypedRateLimitingInterface[crreconcile.Request], 1)}
	src := source.TypedFunc[crreconcile.Request](func(_ context.Context, q workqueue.TypedRateLimitingInterface[crreconcile.Request]) error {
		p.queues <- q
		return nil
	})
	if err := ctrl.Watch(src); err != nil {
		tb.Fatal(err)
	}
	return p
}

var lowPriority = handler.LowPriority

func (p *crPeerImpl) add(i int) { p.q.Add(p.keys.reqs[i]) }

func (p *crPeerImpl) addLow(i int) {
	if p.pq == nil {
		p.q.Add(p.keys.reqs[i])
		return
	}
	// What controller-runtime's handlers do for an object in the initial
	// list or an unchanged resync.
	p.pq.AddWithOpts(priorityqueue.AddOpts{Priority: &lowPriority}, p.keys.reqs[i])
}

func (p *crPeerImpl) start(ctx context.Context, tb testing.TB) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.ctrl.Start(ctx) }()
	select {
	case p.q = <-p.queues:
	case err := <-done:
		cancel()
		tb.Fatalf("controller-runtime controller stopped before starting its source: %v", err)
	case <-time.After(time.Minute):
		cancel()
		tb.Fatal("controller-runtime controller did not start its source within a minute")
	}
	p.pq, _ = p.q.(priorityqueue.PriorityQueue[crreconcile.Request])
	return func() {
		cancel()
		if err := <-done; err != nil {
			tb.Error(err)
		}
	}
}
