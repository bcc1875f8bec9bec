package queue_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

const benchKeys = 10_000

// benchKeySet returns distinct keys in the usual namespace/name form.
func benchKeySet() []string {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("default/foo-%05d", i)
	}
	return keys
}

// countingReconcile is the no-op reconcile both loops run: it only signals
// when the last key of a round has been seen.
type countingReconcile struct {
	seen  atomic.Int64
	round chan struct{}
}

func newCountingReconcile() *countingReconcile {
	return &countingReconcile{round: make(chan struct{}, 1)}
}

func (c *countingReconcile) do() {
	if c.seen.Add(1)%benchKeys == 0 {
		c.round <- struct{}{}
	}
}

// loop is one worker-loop implementation under benchmark.
type loop interface {
	add(key string)
	run(ctx context.Context, workers int) (stop func())
}

// ctrlkitLoop drives queue.Controller.
type ctrlkitLoop struct {
	ctrl *queue.Controller[string]
	// logger is the controller's logger: one that discards everything
	// (like the hand-written loop, which does not log), or a live one, for
	// which each reconcile gets its own contextual logger.
	logger logr.Logger
}

func newCtrlkitLoop(b *testing.B, workers int, rec *countingReconcile, logger logr.Logger, opts ...queue.Option) *ctrlkitLoop {
	r := reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		rec.do()
		return reconcile.Result{}, nil
	})
	ctrl, err := queue.New("bench", r, append([]queue.Option{queue.WithWorkers(workers)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	return &ctrlkitLoop{ctrl: ctrl, logger: logger}
}

func (l *ctrlkitLoop) add(key string) { l.ctrl.Add(key) }

func (l *ctrlkitLoop) run(ctx context.Context, _ int) func() {
	ctx, cancel := context.WithCancel(logr.NewContext(ctx, l.logger))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.ctrl.Run(ctx)
	}()
	return func() { cancel(); <-done }
}

// handLoop is a worker loop written directly against client-go, the way
// sample-controller's processNextWorkItem does it: a named queue with
// client-go's default (no-op) metrics and the default controller rate limiter.
type handLoop struct {
	queue workqueue.TypedRateLimitingInterface[string]
	sync  func(ctx context.Context, key string) error
}

func newHandLoop(rec *countingReconcile) *handLoop {
	return &handLoop{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "Foos"}),
		sync: func(context.Context, string) error { rec.do(); return nil },
	}
}

func (l *handLoop) add(key string) { l.queue.Add(key) }

func (l *handLoop) run(ctx context.Context, workers int) func() {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for l.processNextWorkItem(ctx) {
			}
		})
	}
	return func() { l.queue.ShutDown(); wg.Wait() }
}

func (l *handLoop) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := l.queue.Get()
	if shutdown {
		return false
	}
	defer l.queue.Done(key)
	if err := l.sync(ctx, key); err != nil {
		l.queue.AddRateLimited(key)
		utilruntime.HandleErrorWithContext(ctx, err, "Error syncing", "key", key)
		return true
	}
	l.queue.Forget(key)
	return true
}

// BenchmarkWorkerLoop runs the same no-op reconcile over 10k keys through
// ctrlkit's loop and a hand-written client-go loop. One op is one round of
// 10k keys; ns/key and allocs/key are reported per key. "ctrlkit" runs with a
// logger that discards everything, as the hand-written loop does not log;
// "ctrlkit-live-logger" shows the cost of the per-reconcile contextual logger;
// "ctrlkit-tracing" that of a span per reconcile, every one sampled and
// handed to a span processor that exports nothing (what the SDK does
// before the exporter), and "ctrlkit-tracing-unsampled" that of tracing
// with a sampler that samples none.
func BenchmarkWorkerLoop(b *testing.B) {
	keys := benchKeySet()
	for _, workers := range []int{1, 2, 8} {
		for _, impl := range []string{"handwritten", "ctrlkit", "ctrlkit-live-logger", "ctrlkit-tracing", "ctrlkit-tracing-unsampled"} {
			b.Run(fmt.Sprintf("impl=%s/workers=%d", impl, workers), func(b *testing.B) {
				rec := newCountingReconcile()
				var l loop
				switch impl {
				case "ctrlkit":
					l = newCtrlkitLoop(b, workers, rec, logr.Discard())
				case "ctrlkit-live-logger":
					// A real sink whose output goes nowhere: the cost of
					// contextual logging without the cost of writing.
					l = newCtrlkitLoop(b, workers, rec, funcr.New(func(string, string) {}, funcr.Options{}))
				case "ctrlkit-tracing", "ctrlkit-tracing-unsampled":
					sampler := sdktrace.AlwaysSample()
					if impl == "ctrlkit-tracing-unsampled" {
						sampler = sdktrace.NeverSample()
					}
					tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler),
						sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(tracetest.NewNoopExporter())))
					defer func() { _ = tp.Shutdown(context.Background()) }()
					l = newCtrlkitLoop(b, workers, rec, logr.Discard(), queue.WithTracing(tp))
				default:
					l = newHandLoop(rec)
				}
				stop := l.run(context.Background(), workers)
				defer stop()

				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b.ResetTimer()
				for b.Loop() {
					for _, k := range keys {
						l.add(k)
					}
					<-rec.round
				}
				b.StopTimer()
				runtime.ReadMemStats(&after)
				perKey := float64(b.N) * benchKeys
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perKey, "ns/key")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/perKey, "allocs/key")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
