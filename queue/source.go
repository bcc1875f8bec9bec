package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// Enqueuer is the part of a Controller that a Source uses.
type Enqueuer[K comparable] interface {
	// Add enqueues key now, without rate limiting.
	Add(key K)
	// AddLowPriority enqueues key behind the keys added with Add.
	AddLowPriority(key K)
	// AddAfter enqueues key once d has passed.
	AddAfter(key K, d time.Duration)
}

// Source feeds keys into a controller from outside its informers. Start
// runs until ctx is cancelled (or the source is exhausted) and must return
// promptly after that; Run waits for it. A Source that also has a method
// Validate() error is validated by New.
type Source[K comparable] interface {
	Start(ctx context.Context, q Enqueuer[K])
}

// SourceFunc adapts a function to the Source interface.
type SourceFunc[K comparable] func(ctx context.Context, q Enqueuer[K])

// Start calls f(ctx, q).
func (f SourceFunc[K]) Start(ctx context.Context, q Enqueuer[K]) { f(ctx, q) }

// SourceOption configures Periodic and Channel. A nil SourceOption is
// ignored.
type SourceOption func(*sourceConfig)

type sourceConfig struct {
	low     bool
	jitter  float64
	atStart bool
}

// LowPriority makes a source add its keys with AddLowPriority, behind fresh
// changes: for a periodic full resync, or notifications that say "something
// may have changed" rather than what.
func LowPriority() SourceOption {
	return func(c *sourceConfig) { c.low = true }
}

// Jitter makes each wait of a Periodic source a random duration between
// interval and interval*(1+factor), so that replicas, or many controllers
// in one process, do not all list at the same moment. factor must be
// between 0 and 1; the default is no jitter.
func Jitter(factor float64) SourceOption {
	return func(c *sourceConfig) { c.jitter = factor }
}

// AtStart makes a Periodic source list once as soon as it starts (when the
// controller runs, after a leader election for instance), and then every
// interval: for a full sync of an external system at start-up.
func AtStart() SourceOption {
	return func(c *sourceConfig) { c.atStart = true }
}

func newSourceConfig(opts []SourceOption) sourceConfig {
	var c sourceConfig
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	return c
}

// Periodic returns a Source that, every interval, enqueues the keys that list
// returns. The first tick comes one interval after Start (at once with
// AtStart). A list error is
// logged and that tick skipped. Typical use: re-check objects whose state
// depends on the clock, or on something no informer watches (a full resync
// of an external system, with LowPriority). New rejects a Periodic source
// whose interval is not positive, whose list is nil, or whose jitter is
// outside [0, 1].
func Periodic[K comparable](interval time.Duration, list func(ctx context.Context) ([]K, error), opts ...SourceOption) Source[K] {
	return &periodic[K]{interval: interval, list: list, cfg: newSourceConfig(opts)}
}

type periodic[K comparable] struct {
	interval time.Duration
	list     func(ctx context.Context) ([]K, error)
	cfg      sourceConfig
}

// Validate reports a non-positive interval, a nil list function or a
// jitter outside [0, 1].
func (p *periodic[K]) Validate() error {
	var errs []error
	if p.interval <= 0 {
		errs = append(errs, fmt.Errorf("periodic source: interval must be positive, got %s", p.interval))
	}
	if p.list == nil {
		errs = append(errs, errors.New("periodic source: list function must not be nil"))
	}
	if p.cfg.jitter < 0 || p.cfg.jitter > 1 {
		errs = append(errs, fmt.Errorf("periodic source: jitter must be between 0 and 1, got %v", p.cfg.jitter))
	}
	return errors.Join(errs...)
}

// Start enqueues the listed keys on every tick until ctx ends.
func (p *periodic[K]) Start(ctx context.Context, q Enqueuer[K]) {
	add := addFunc(q, p.cfg.low)
	first := p.next()
	if p.cfg.atStart {
		first = 0
	}
	timer := time.NewTimer(first)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		keys, err := p.list(ctx)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Periodic source could not list keys")
		}
		for _, k := range keys {
			add(k)
		}
		timer.Reset(p.next())
	}
}

func (p *periodic[K]) next() time.Duration {
	if p.cfg.jitter == 0 {
		return p.interval
	}
	return wait.Jitter(p.interval, p.cfg.jitter)
}

// Channel returns a Source that maps every value received from ch to keys
// with keys and enqueues them, until ch is closed or the controller stops.
// The values can be anything: change notifications of an external system,
// webhook payloads, or keys themselves (with a keys function that returns
// its argument). keys runs on the source's goroutine, one value at a time.
// New rejects a nil channel or a nil keys function.
func Channel[T any, K comparable](ch <-chan T, keys func(T) []K, opts ...SourceOption) Source[K] {
	return &channelSource[T, K]{ch: ch, keys: keys, cfg: newSourceConfig(opts)}
}

type channelSource[T any, K comparable] struct {
	ch   <-chan T
	keys func(T) []K
	cfg  sourceConfig
}

// Validate reports a nil channel, which would never deliver a value, or a
// nil keys function.
func (c *channelSource[T, K]) Validate() error {
	var errs []error
	if c.ch == nil {
		errs = append(errs, errors.New("channel source: channel must not be nil"))
	}
	if c.keys == nil {
		errs = append(errs, errors.New("channel source: keys function must not be nil"))
	}
	return errors.Join(errs...)
}

// Start enqueues the keys of every value from the channel until it is
// closed or ctx ends.
func (c *channelSource[T, K]) Start(ctx context.Context, q Enqueuer[K]) {
	add := addFunc(q, c.cfg.low)
	for {
		select {
		case <-ctx.Done():
			return
		case v, ok := <-c.ch:
			if !ok {
				return
			}
			for _, k := range c.keys(v) {
				add(k)
			}
		}
	}
}

func addFunc[K comparable](q Enqueuer[K], low bool) func(K) {
	if low {
		return q.AddLowPriority
	}
	return q.Add
}
