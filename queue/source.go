package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"
)

// Enqueuer is the part of a Controller that a Source uses.
type Enqueuer[K comparable] interface {
	// Add enqueues key now, without rate limiting.
	Add(key K)
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

// Periodic returns a Source that, every interval, enqueues the keys that list
// returns. The first tick comes one interval after Start. A list error is
// logged and that tick skipped. Typical use: re-check objects whose state
// depends on the clock, or on something no informer watches. New rejects a
// Periodic source whose interval is not positive or whose list is nil.
func Periodic[K comparable](interval time.Duration, list func(ctx context.Context) ([]K, error)) Source[K] {
	return &periodic[K]{interval: interval, list: list}
}

type periodic[K comparable] struct {
	interval time.Duration
	list     func(ctx context.Context) ([]K, error)
}

// Validate reports a non-positive interval or a nil list function.
func (p *periodic[K]) Validate() error {
	if p.interval <= 0 {
		return fmt.Errorf("periodic source: interval must be positive, got %s", p.interval)
	}
	if p.list == nil {
		return errors.New("periodic source: list function must not be nil")
	}
	return nil
}

// Start enqueues the listed keys on every tick until ctx ends.
func (p *periodic[K]) Start(ctx context.Context, q Enqueuer[K]) {
	ticker := time.NewTicker(p.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		keys, err := p.list(ctx)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Periodic source could not list keys")
			continue
		}
		for _, k := range keys {
			q.Add(k)
		}
	}
}

// Channel returns a Source that enqueues every key received from ch until ch
// is closed or the controller stops. New rejects a nil channel.
func Channel[K comparable](ch <-chan K) Source[K] {
	return channelSource[K](ch)
}

type channelSource[K comparable] <-chan K

// Validate reports a nil channel, which would never deliver a key.
func (ch channelSource[K]) Validate() error {
	if ch == nil {
		return errors.New("channel source: channel must not be nil")
	}
	return nil
}

// Start enqueues keys from the channel until it is closed or ctx ends.
func (ch channelSource[K]) Start(ctx context.Context, q Enqueuer[K]) {
	for {
		select {
		case <-ctx.Done():
			return
		case k, ok := <-ch:
			if !ok {
				return
			}
			q.Add(k)
		}
	}
}
