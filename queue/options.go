package queue

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// Defaults applied by New when the corresponding option is not given.
const (
	// DefaultWorkers is the number of concurrent reconciles.
	DefaultWorkers = 1
	// DefaultShutdownTimeout bounds how long Run waits for in-flight
	// reconciles after its context is cancelled.
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultBaseDelay is the first retry delay of a failing key; it doubles
	// on every further failure of that key.
	DefaultBaseDelay = 5 * time.Millisecond
	// DefaultMaxDelay caps the per-key retry delay.
	DefaultMaxDelay = 1000 * time.Second
	// DefaultRetryQPS and DefaultRetryBurst size the token bucket shared by
	// all retries of one controller.
	DefaultRetryQPS   = 10
	DefaultRetryBurst = 100
)

// DefaultRateLimiter returns the rate limiter used when WithRateLimiter is
// not given: per-key exponential backoff from DefaultBaseDelay to
// DefaultMaxDelay, combined (the larger delay wins) with a token bucket of
// DefaultRetryQPS and DefaultRetryBurst shared by all keys. The rate limiter
// is consulted only for retries (failed reconciles); keys added with Add or
// AddLowPriority are never delayed by it.
func DefaultRateLimiter[K comparable]() workqueue.TypedRateLimiter[K] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[K](DefaultBaseDelay, DefaultMaxDelay),
		&workqueue.TypedBucketRateLimiter[K]{Limiter: rate.NewLimiter(rate.Limit(DefaultRetryQPS), DefaultRetryBurst)},
	)
}

// Option configures New. A nil Option is ignored.
type Option func(*config)

type config struct {
	workers          int
	rateLimiter      workqueue.TypedRateLimiter[any]
	reconcileTimeout time.Duration
	shutdownTimeout  time.Duration
	metrics          Metrics
	clock            clock.Clock
	// fairness is the func(K) string of WithFairness, checked against
	// the controller's key type by options.
	fairness any
	// tracer is WithTracing's, nil without it: tracing is off.
	tracer trace.Tracer
	errs   []error
}

// WithWorkers sets how many keys are reconciled at once. Default
// DefaultWorkers; n must be positive.
func WithWorkers(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.errs = append(c.errs, fmt.Errorf("workers must be at least 1, got %d", n))
		}
		c.workers = n
	}
}

// WithRateLimiter sets the rate limiter that decides retry delays. It is
// given the controller's keys as values of type any, so one limiter type
// serves controllers of every key type:
//
//	queue.WithRateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[any](time.Second, time.Minute))
//
// Default DefaultRateLimiter.
func WithRateLimiter(rl workqueue.TypedRateLimiter[any]) Option {
	return func(c *config) {
		if rl == nil {
			c.errs = append(c.errs, errors.New("rate limiter is nil"))
			return
		}
		c.rateLimiter = rl
	}
}

// WithReconcileTimeout bounds each Reconcile call through its context. A
// reconcile whose deadline fired is counted as timed out, whatever it
// returned. Default: no bound; d must be positive.
func WithReconcileTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs = append(c.errs, fmt.Errorf("reconcile timeout must be positive, got %s", d))
		}
		c.reconcileTimeout = d
	}
}

// WithShutdownTimeout bounds how long Run waits for in-flight reconciles
// after its context is cancelled; then their contexts are cancelled too, and
// Run waits as long again. Default DefaultShutdownTimeout; d must be
// positive.
func WithShutdownTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs = append(c.errs, fmt.Errorf("shutdown timeout must be positive, got %s", d))
		}
		c.shutdownTimeout = d
	}
}

// WithMetrics sends the controller's measurements to m; its workqueue
// provider is given to this controller's queue only. Default NoopMetrics.
func WithMetrics(m Metrics) Option {
	return func(c *config) {
		if m == nil {
			c.errs = append(c.errs, errors.New("metrics are nil"))
			return
		}
		c.metrics = m
	}
}

// WithClock sets the clock the controller waits by: keys added with
// AddAfter or Result.RequeueAfter, the retries of failed reconciles after
// their backoff, and the ticks of its Periodic sources become due by it. A
// fake clock (k8s.io/utils/clock/testing) makes them due only when a test
// moves it, which queuetest.Advance does. Reconcile timeouts, the retry
// token bucket and the workqueue metrics keep real time. Default the real
// clock.
func WithClock(clk clock.Clock) Option {
	return func(c *config) {
		if clk == nil {
			c.errs = append(c.errs, errors.New("clock is nil"))
			return
		}
		c.clock = clk
	}
}

// WithFairness makes the controller share its workers fairly between groups
// of keys, group naming the group of a key (say, the cluster a key belongs
// to): waiting keys are handed out one group at a time, in turn, so a group
// with many keys waiting delays another group's next key by at most one key
// of each group, not by its whole backlog. Within a group, keys keep the
// order and the two priorities of Add and AddLowPriority. group is called
// on every add and must be cheap; its key type must be the controller's.
// Default: one group.
//
// Fairness shares the turns, not the retry rate limit: give a group its own
// retry budget with a rate limiter that keeps one per group (WithRateLimiter).
func WithFairness[K comparable](group func(K) string) Option {
	return func(c *config) {
		if group == nil {
			c.errs = append(c.errs, errors.New("fairness group function is nil"))
			return
		}
		c.fairness = group
	}
}

// WithTracing makes the controller trace its reconciles with tp's tracer
// (scope tracing.ScopeName): each reconcile is a span, a new root linked to
// what set it off, whose context the Reconciler's context carries, so that
// the requests of clients traced with tracing.Transport are its children
// and the writes of package reconcile/write carry its trace context in the
// tracing.Annotation of the objects they write. The span names the
// controller, the key (and a fleet key's cluster), the attempt, how the
// reconcile ended (result, requeue, requeue-after, error) and whether it
// wrote; the triggers of the key (the informer events, periodic ticks,
// delays, channel values and fleet changes recorded since its last
// reconcile started) are its links, at most tracing.MaxTriggers. The
// controller records triggers only with this option. docs/tracing.md
// shows the trace of a Foo.
//
// Sampling and export are tp's: give it tracing.FollowLinks as the root
// sampler of a ParentBased one to follow the decisions of the writes that
// set reconciles off, and tracing.DropEmpty to drop the spans of
// reconciles that wrote nothing. Default: no tracing, at no cost in the
// worker loop.
//
// ExampleWithTracing runs a traced controller with an in-memory exporter;
// a test records the spans with tracetest.SpanRecorder ("Testing traces
// with fakes" in docs/tracing.md). operator.Flags.ControllerOptions gives
// this option when tracing is on.
func WithTracing(tp trace.TracerProvider) Option {
	return func(c *config) {
		if tp == nil {
			c.errs = append(c.errs, errors.New("tracer provider is nil"))
			return
		}
		c.tracer = tp.Tracer(tracing.ScopeName)
	}
}

// options applies opts for a controller with keys of type K and checks them.
func options[K comparable](opts []Option) (config, workqueue.TypedRateLimiter[K], error) {
	c := config{workers: DefaultWorkers, shutdownTimeout: DefaultShutdownTimeout, metrics: NoopMetrics{}}
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	if _, ok := c.fairness.(func(K) string); c.fairness != nil && !ok {
		var key K
		c.errs = append(c.errs, fmt.Errorf("fairness groups keys of type %T, not the controller's %T", c.fairness, key))
	}
	rl := DefaultRateLimiter[K]()
	if c.rateLimiter != nil {
		rl = anyKeys[K]{c.rateLimiter}
	}
	return c, rl, errors.Join(c.errs...)
}

// anyKeys hands the keys of a controller to a rate limiter of any keys.
type anyKeys[K comparable] struct {
	rl workqueue.TypedRateLimiter[any]
}

func (a anyKeys[K]) When(key K) time.Duration { return a.rl.When(key) }
func (a anyKeys[K]) Forget(key K)             { a.rl.Forget(key) }
func (a anyKeys[K]) NumRequeues(key K) int    { return a.rl.NumRequeues(key) }
