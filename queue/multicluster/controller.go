package multicluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// ReconcileFunc reconciles one key of a member cluster, given the value
// the fleet's engage function returned for that cluster. Its context is
// cancelled with a cause wrapping ErrLeft if the cluster leaves, moves to
// another replica or stops answering meanwhile; at a normal stop it runs
// on until the controller's shutdown timeout (see Fleet.Run).
type ReconcileFunc[T any] func(ctx context.Context, cluster T, key Key) (reconcile.Result, error)

// NewController returns a queue.Controller named name over the keys of f's
// clusters, which calls r with the value of the key's cluster. It is fair
// between clusters (queue.WithFairness): a cluster with a backlog delays
// another cluster's next key by one turn, not by its backlog. Each cluster
// has its own retry rate limiter (queue.DefaultRateLimiter, dropped when
// the cluster leaves), so one failing cluster does not spend the others'
// retry budget. The controller reconciles only the keys of the clusters
// that are ready, and a cluster that leaves cancels its reconciles and
// waits for them. The keys added for a cluster that is this replica's
// member but not ready (engaging, engaged again after failed probes or
// with new credentials), by any source, are held and queued again once
// it is ready, as is the key of a reconcile cancelled because its cluster
// was engaged again; those of a cluster that is no member here are
// dropped.
// opts are applied after these (a queue.WithRateLimiter among them
// replaces the per-cluster one).
func NewController[T any](f *Fleet[T], name string, r ReconcileFunc[T], opts ...queue.Option) (*queue.Controller[Key], error) {
	if f == nil || r == nil {
		return nil, errors.New("multicluster: NewController needs a fleet and a reconcile function")
	}
	limiter := &perCluster{limiters: map[string]workqueue.TypedRateLimiter[any]{}}
	f.mu.Lock()
	if f.started {
		f.mu.Unlock()
		return nil, fmt.Errorf("multicluster: fleet %q: NewController called after Run", f.name)
	}
	f.onLeave = append(f.onLeave, limiter.forget)
	f.mu.Unlock()
	reconciler := reconcile.Func[Key](func(ctx context.Context, key Key) (reconcile.Result, error) {
		// The claim holds the cluster and carries its value.
		value, _ := ctx.Value(claimedKey{}).(T)
		start := time.Now()
		res, err := r(ctx, value, key)
		f.cfg.metrics.ObserveClusterReconcile(f.name, key.Cluster, time.Since(start), err != nil)
		return res, err
	})
	all := append([]queue.Option{queue.WithFairness(clusterOf), queue.WithRateLimiter(limiter)}, opts...)
	ctrl, err := queue.New(name, reconciler, all...)
	if err != nil {
		return nil, err
	}
	if err := ctrl.Restrict(&ownership[T]{f: f, q: ctrl}); err != nil {
		return nil, err
	}
	return ctrl, nil
}

// ownership is the queue.Ownership of a controller q built with
// NewController: the Fleet's, except that q owns the keys of a cluster
// whose keys the Fleet holds, and a key whose cluster is not ready when
// its turn comes is held for q until the cluster is.
type ownership[T any] struct {
	f *Fleet[T]
	q *queue.Controller[Key]
}

func (o *ownership[T]) Start(ctx context.Context, _ queue.Enqueuer[Key]) { <-ctx.Done() }

func (o *ownership[T]) Owns(key Key) bool {
	o.f.mu.Lock()
	defer o.f.mu.Unlock()
	return o.f.lockedReadyOrHeld(key.Cluster)
}

func (o *ownership[T]) Claim(ctx context.Context, key Key) (context.Context, func(), bool) {
	return o.f.claim(ctx, key, o, o.q)
}

// perCluster is a retry rate limiter with one queue.DefaultRateLimiter per
// cluster.
type perCluster struct {
	mu       sync.Mutex
	limiters map[string]workqueue.TypedRateLimiter[any]
}

// of returns the limiter of item's cluster, making one if create is set;
// nil if there is none.
func (p *perCluster) of(item any, create bool) workqueue.TypedRateLimiter[any] {
	cluster := ""
	if k, ok := item.(Key); ok {
		cluster = k.Cluster
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.limiters[cluster]
	if !ok && create {
		l = queue.DefaultRateLimiter[any]()
		p.limiters[cluster] = l
	}
	return l
}

func (p *perCluster) When(item any) time.Duration { return p.of(item, true).When(item) }

func (p *perCluster) Forget(item any) {
	if l := p.of(item, false); l != nil {
		l.Forget(item)
	}
}

func (p *perCluster) NumRequeues(item any) int {
	if l := p.of(item, false); l != nil {
		return l.NumRequeues(item)
	}
	return 0
}

// forget drops the limiter of a cluster that left.
func (p *perCluster) forget(cluster string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.limiters, cluster)
}
