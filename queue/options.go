package queue

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
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
	rateLimiter      any // a workqueue.TypedRateLimiter[K]
	reconcileTimeout time.Duration
	shutdownTimeout  time.Duration
	metrics          Metrics
	sources          []any // Source[K]
	ownership        any   // Ownership[K]
	errs             []error
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

// WithRateLimiter sets the rate limiter that decides retry delays; its key
// type must be the controller's. Default DefaultRateLimiter.
func WithRateLimiter[K comparable](rl workqueue.TypedRateLimiter[K]) Option {
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

// WithSource adds a Source that feeds keys into the controller from outside
// its informers (see Periodic and Channel); its key type must be the
// controller's. Run starts every source and stops it before returning. The
// option may be given more than once.
func WithSource[K comparable](s Source[K]) Option {
	return func(c *config) {
		if s == nil {
			c.errs = append(c.errs, errors.New("source is nil"))
			return
		}
		c.sources = append(c.sources, s)
	}
}

// OptionError returns an Option that makes New fail with err, for option
// constructors outside this package whose own setup failed, so that the
// failure is reported where the queue's own option errors are. A nil err
// makes an Option that does nothing.
func OptionError(err error) Option {
	return func(c *config) {
		if err != nil {
			c.errs = append(c.errs, err)
		}
	}
}

// options applies opts for a controller with keys of type K and checks them.
func options[K comparable](opts []Option) (config, workqueue.TypedRateLimiter[K], []Source[K], Ownership[K], error) {
	c := config{workers: DefaultWorkers, shutdownTimeout: DefaultShutdownTimeout, metrics: NoopMetrics{}}
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	rl := DefaultRateLimiter[K]()
	if c.rateLimiter != nil {
		typed, ok := c.rateLimiter.(workqueue.TypedRateLimiter[K])
		if !ok {
			c.errs = append(c.errs, fmt.Errorf("rate limiter %T is not for keys of type %T", c.rateLimiter, *new(K)))
		}
		rl = typed
	}
	sources := make([]Source[K], 0, len(c.sources))
	for i, s := range c.sources {
		typed, ok := s.(Source[K])
		if !ok {
			c.errs = append(c.errs, fmt.Errorf("source %d (%T) is not for keys of type %T", i, s, *new(K)))
			continue
		}
		if v, ok := typed.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				c.errs = append(c.errs, fmt.Errorf("source %d: %w", i, err))
			}
		}
		sources = append(sources, typed)
	}
	var ownership Ownership[K]
	if c.ownership != nil {
		typed, ok := c.ownership.(Ownership[K])
		if !ok {
			c.errs = append(c.errs, fmt.Errorf("ownership %T is not for keys of type %T", c.ownership, *new(K)))
		} else {
			ownership = typed
			sources = append(sources, typed)
		}
	}
	return c, rl, sources, ownership, errors.Join(c.errs...)
}
