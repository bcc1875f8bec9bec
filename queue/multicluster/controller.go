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
// cancelled with ErrLeft if the cluster leaves meanwhile.
type ReconcileFunc[T any] func(ctx context.Context, cluster T, key Key) (reconcile.Result, error)

// NewController returns a queue.Controller named name over the keys of f's
// clusters, which calls r with the value of the key's cluster. It is fair
// between clusters (queue.WithFairness): a cluster with a backlog delays
// another cluster's next key by one turn, not by its backlog. Each cluster
// has its own retry rate limiter (queue.DefaultRateLimiter, dropped when
// the cluster leaves), so one failing cluster does not spend the others'
// retry budget. The controller reconciles only the keys of the clusters
// that are ready, and a cluster that leaves cancels its reconciles and
// waits for them. opts are applied after these (a queue.WithRateLimiter
// among them replaces the per-cluster one).
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
		value, ok := f.Get(key.Cluster)
		if !ok {
			// The claim holds the cluster: only a cluster that started
			// to leave is not ready, and its claims are cancelled.
			return reconcile.Result{}, fmt.Errorf("cluster %q: %w", key.Cluster, ErrLeft)
		}
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
	if err := ctrl.Restrict(f); err != nil {
		return nil, err
	}
	return ctrl, nil
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
