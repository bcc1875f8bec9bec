package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// Enqueuer is the part of a Controller that sources of keys use (Periodic,
// Channel, an Ownership).
type Enqueuer[K comparable] interface {
	// Add enqueues key now, without rate limiting.
	Add(key K)
	// AddLowPriority enqueues key behind the keys added with Add.
	AddLowPriority(key K)
	// AddAfter enqueues key once d has passed.
	AddAfter(key K, d time.Duration)
}

// Feed returns a Watch that runs fn while the controller runs, for keys
// that come from outside its informers: fn adds them to the controller (or
// any queue) it closes over, runs until ctx is cancelled (or it has nothing
// more to add) and must return promptly after that; Run waits for it.
// Periodic and Channel are the common cases.
//
//	err := ctrl.Watch(queue.Feed(func(ctx context.Context) {
//		for {
//			select {
//			case <-ctx.Done():
//				return
//			case key := <-keys:
//				ctrl.Add(key)
//			}
//		}
//	}))
func Feed(fn func(ctx context.Context)) Watch {
	if fn == nil {
		return Watch{err: errors.New("feed function must not be nil")}
	}
	return Watch{start: fn}
}

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

// Periodic returns a Watch that, every interval while the controller runs,
// adds to q the keys that list returns. The first tick comes one interval
// after the controller starts (at once with AtStart). A list error is
// logged, and whatever keys list returned with it are still added (a
// partial list), so a list that fails returns nil keys to skip the tick.
// Typical use: re-check objects whose state depends on the clock, or on
// something no informer watches (a full resync of an external system, with
// LowPriority):
//
//	err := ctrl.Watch(queue.Periodic(ctrl, 10*time.Minute, listAll, queue.AtStart(), queue.LowPriority()))
//
// Controller.Watch refuses a Periodic Watch whose queue or list is nil,
// whose interval is not positive or whose jitter is outside [0, 1].
func Periodic[K comparable](q Enqueuer[K], interval time.Duration, list func(ctx context.Context) ([]K, error), opts ...SourceOption) Watch {
	p := &periodic[K]{interval: interval, list: list, cfg: newSourceConfig(opts)}
	if err := p.validate(q); err != nil {
		return Watch{err: err}
	}
	return Watch{start: func(ctx context.Context) { p.run(ctx, q) }, periodic: p}
}

// periodicSource is what a Controller knows of its Periodic sources: it
// gives them its clock and asks when they tick next.
type periodicSource interface {
	useClock(clk clock.Clock)
	nextDue() (time.Time, bool)
}

type periodic[K comparable] struct {
	interval time.Duration
	list     func(ctx context.Context) ([]K, error)
	cfg      sourceConfig

	mu    sync.Mutex
	clock clock.Clock // set by the controller's Run; real if nil
	next  time.Time   // when the armed timer fires; zero while not running
}

func (p *periodic[K]) useClock(clk clock.Clock) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clock = clk
}

func (p *periodic[K]) nextDue() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next, !p.next.IsZero()
}

// clockOf returns the clock the source waits by.
func (p *periodic[K]) clockOf() clock.Clock {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	return p.clock
}

// arm records that the timer just set fires d from now. It is called after
// the timer is set, so that the time it records is never earlier than the
// timer's, even when a fake clock moves in between: NextDue must not name a
// time at which nothing fires.
func (p *periodic[K]) arm(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = p.clock.Now().Add(d)
}

// Validate reports a non-positive interval, a nil list function or a
// jitter outside [0, 1].
func (p *periodic[K]) validate(q Enqueuer[K]) error {
	var errs []error
	if q == nil {
		errs = append(errs, errors.New("periodic source: queue must not be nil"))
	}
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

// run enqueues the listed keys on every tick until ctx ends.
func (p *periodic[K]) run(ctx context.Context, q Enqueuer[K]) {
	add := addFunc(q, p.cfg.low)
	first := p.wait()
	if p.cfg.atStart {
		first = 0
	}
	timer := p.clockOf().NewTimer(first)
	p.arm(first)
	defer func() {
		timer.Stop()
		p.mu.Lock()
		p.next = time.Time{}
		p.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		}
		keys, err := p.list(ctx)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Periodic source could not list keys")
		}
		traceKeys(q, keys, tracing.Trigger{Source: tracing.SourcePeriodic})
		for _, k := range keys {
			add(k)
		}
		d := p.wait()
		timer.Reset(d)
		p.arm(d)
	}
}

// wait is how long until the next tick.
func (p *periodic[K]) wait() time.Duration {
	if p.cfg.jitter == 0 {
		return p.interval
	}
	return wait.Jitter(p.interval, p.cfg.jitter)
}

// Channel returns a Watch that maps every value received from ch to keys
// with keys and adds them to q, until ch is closed or the controller stops.
// The values can be anything: change notifications of an external system,
// webhook payloads, or keys themselves (with a keys function that returns
// its argument). keys runs on the Watch's goroutine, one value at a time.
// Controller.Watch refuses a Channel Watch whose queue, channel or keys
// function is nil.
func Channel[T any, K comparable](q Enqueuer[K], ch <-chan T, keys func(T) []K, opts ...SourceOption) Watch {
	c := &channelSource[T, K]{ch: ch, keys: keys, cfg: newSourceConfig(opts)}
	if err := c.validate(q); err != nil {
		return Watch{err: err}
	}
	return Watch{start: func(ctx context.Context) { c.run(ctx, q) }}
}

type channelSource[T any, K comparable] struct {
	ch   <-chan T
	keys func(T) []K
	cfg  sourceConfig
}

// Validate reports a nil channel, which would never deliver a value, or a
// nil keys function.
func (c *channelSource[T, K]) validate(q Enqueuer[K]) error {
	var errs []error
	if q == nil {
		errs = append(errs, errors.New("channel source: queue must not be nil"))
	}
	if c.ch == nil {
		errs = append(errs, errors.New("channel source: channel must not be nil"))
	}
	if c.keys == nil {
		errs = append(errs, errors.New("channel source: keys function must not be nil"))
	}
	return errors.Join(errs...)
}

// run enqueues the keys of every value from the channel until it is
// closed or ctx ends.
func (c *channelSource[T, K]) run(ctx context.Context, q Enqueuer[K]) {
	add := addFunc(q, c.cfg.low)
	for {
		select {
		case <-ctx.Done():
			return
		case v, ok := <-c.ch:
			if !ok {
				return
			}
			keys := c.keys(v)
			traceKeys(q, keys, tracing.Trigger{Source: tracing.SourceChannel})
			for _, k := range keys {
				add(k)
			}
		}
	}
}

// traceKeys records t for keys when q traces (tracing.Recorder).
func traceKeys[K comparable](q Enqueuer[K], keys []K, t tracing.Trigger) {
	if r := tracing.RecorderOf[K](q); r != nil {
		for _, k := range keys {
			r.Trigger(k, t)
		}
	}
}

func addFunc[K comparable](q Enqueuer[K], low bool) func(K) {
	if low {
		return q.AddLowPriority
	}
	return q.Add
}
