package multicluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// ErrNotReady is what Fleet.Each reports for a member it walks that is
// not ready: errors.Is(err, ErrNotReady) holds, and the error wraps the
// Status's Err when there is one.
var ErrNotReady = errors.New("the cluster is not ready")

// eachParallel is how many members Each walks at once.
const eachParallel = 16

// Each calls fn for every member its Provider reports (and, with
// WithSharding, this replica owns) that is ready, with the value engage
// returned for it, for a reconcile of a hub object that walks the members
// (a hub-centric reconcile), and returns one entry per such member: fn's
// error, nil if it returned nil, or an error wrapping ErrNotReady for a
// member that is not ready (fn is not called for it). A member that is
// wanted but not ready is always reported so, never left out: one being
// engaged or engaged again (new credentials, failed probes) while its old
// engagement drains, and every member while the Fleet stops or after it
// stopped. Only a member its Provider no longer reports (it left, or was
// refused: see Refuser), or, sharded, that is another replica's, has no
// entry: a cleanup that waits for every member holding something can read
// "no entry" as "no longer a member" and ErrNotReady as "try again".
//
// One member does not hold up the others: up to 16 members are walked at
// once, each call's context ends after timeout (when positive) with a
// cause naming the member and the timeout, and a panic in fn is recovered
// and reported as the member's error. Each call holds the member as a
// reconcile of NewController does: the member does not finish leaving
// until fn returns, and fn's context is cancelled with a cause wrapping
// ErrLeft when it starts to leave, moves to another replica or stops
// answering, so nothing is written to a member after it left. Each
// returns once every call has returned.
//
// With WithSharding, Each walks only the members this replica owns, not
// the others': a reconcile that must reach every member (to build a
// status across them, as Results does) needs a Fleet without sharding,
// run leader-elected.
func (f *Fleet[T]) Each(ctx context.Context, timeout time.Duration, fn func(ctx context.Context, cluster string, v T) error) map[string]error {
	clusters := f.walked()
	errs := make(map[string]error, len(clusters))
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, eachParallel)
	for _, cluster := range clusters {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			err := f.eachOne(ctx, timeout, cluster, fn)
			mu.Lock()
			errs[cluster] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	return errs
}

// walked returns, sorted, the members Each walks: those the Provider
// reports and, sharded, this replica owns, engaged or not.
func (f *Fleet[T]) walked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for _, name := range f.set.Wanted() {
		if f.gate == nil || f.gate.Owns(name) {
			names = append(names, name)
		}
	}
	return names
}

// eachOne is Each's call for one cluster.
func (f *Fleet[T]) eachOne(ctx context.Context, timeout time.Duration, cluster string, fn func(ctx context.Context, cluster string, v T) error) (err error) {
	// Once the Fleet stops, every member is not ready, also a ready one
	// whose stop has not begun yet (the Fleet stops them one by one).
	select {
	case <-f.stopping:
		return fmt.Errorf("%w: %w", ErrNotReady, errStopping)
	default:
	}
	claimCtx, release, ok := f.claim(ctx, Key{Cluster: cluster}, nil, nil)
	if !ok {
		st, _ := f.Status(cluster)
		select {
		case <-f.stopping:
			return fmt.Errorf("%w: %w", ErrNotReady, errStopping)
		default:
		}
		if st.Err != nil {
			return fmt.Errorf("%w: %w", ErrNotReady, st.Err)
		}
		return ErrNotReady
	}
	defer release()
	value, _ := claimCtx.Value(claimedKey{}).(T)
	if timeout > 0 {
		var cancel context.CancelFunc
		claimCtx, cancel = context.WithTimeoutCause(claimCtx, timeout, fmt.Errorf("cluster %q: no answer within %s", cluster, timeout))
		defer cancel()
	}
	logger := klog.FromContext(ctx).WithValues("cluster", cluster)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cluster %q: panic: %v", cluster, r)
			logger.Error(err, "Panic in a walk of the fleet's members", "stack", string(debug.Stack()))
		}
	}()
	return fn(klog.NewContext(claimCtx, logger), cluster, value)
}

// Failed returns the errors of errs, as Each returns them, but nil ones
// and those wrapping ErrNotReady, each prefixed with its member's name, in
// the order of the names, joined with errors.Join; nil if none is left.
// A hub-centric reconcile returns it: a member that failed is tried again
// with the key's backoff (also when it fails the same way again), while a
// member that is not ready comes back with OnMembers when it is.
func Failed(errs map[string]error) error {
	var failed []error
	for _, cluster := range slices.Sorted(maps.Keys(errs)) {
		if err := errs[cluster]; err != nil && !errors.Is(err, ErrNotReady) {
			failed = append(failed, fmt.Errorf("member %s: %w", cluster, err))
		}
	}
	return errors.Join(failed...)
}
