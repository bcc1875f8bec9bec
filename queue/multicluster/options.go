package multicluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/shard"
)

// Defaults of a Fleet.
const (
	// DefaultSyncTimeout is how long a joining cluster's informers may
	// take to sync before the attempt counts as failed.
	DefaultSyncTimeout = time.Minute
	// DefaultRetryBaseDelay and DefaultRetryMaxDelay bound the backoff
	// between attempts to engage a cluster that failed.
	DefaultRetryBaseDelay = time.Second
	DefaultRetryMaxDelay  = 5 * time.Minute
	// DefaultProbeInterval is how often an engaged cluster is asked for
	// its version, to notice one that stopped answering.
	DefaultProbeInterval = 10 * time.Second
)

// Option configures New. A nil Option is ignored.
type Option func(*config)

type config struct {
	membership    *shard.Membership
	metrics       Metrics
	syncTimeout   time.Duration
	retryBase     time.Duration
	retryMax      time.Duration
	resync        time.Duration
	probeInterval time.Duration
	newClient     func(ctx context.Context, cluster string, cfg *rest.Config) (kubernetes.Interface, error)
	clientWait    time.Duration // how long Run waits for constructors, engage functions and cancelled reconciles at a stop
	errs          []error
}

// WithSharding shares the member clusters among the replicas of m's group:
// each cluster is engaged (its informers started, its keys reconciled) by
// one replica at a time, the one that owns the cluster's name in m (see
// package queue/shard), so the clusters and the memory of their caches
// divide among the replicas. The caller runs m, and keeps it running until
// the Fleet's Run has returned, as operator.WithSharding does: a
// membership that stops first hands this replica's clusters over to the
// others, so a stop's drain cancels their reconciles at once, with
// ErrLeft.
func WithSharding(m *shard.Membership) Option {
	return func(c *config) {
		if m == nil {
			c.errs = append(c.errs, errors.New("sharding membership is nil"))
			return
		}
		c.membership = m
	}
}

// WithMetrics sends the fleet's measurements to m (metrics.Recorder is
// one). Default: none.
func WithMetrics(m Metrics) Option {
	return func(c *config) {
		if m == nil {
			c.errs = append(c.errs, errors.New("metrics are nil"))
			return
		}
		c.metrics = m
	}
}

// WithSyncTimeout sets how long a joining cluster's informers may take to
// sync before the attempt fails and is retried after a backoff; it bounds
// the context of the client constructor (WithClients) too. Default
// DefaultSyncTimeout; d must be positive.
func WithSyncTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs = append(c.errs, fmt.Errorf("sync timeout must be positive, got %s", d))
		}
		c.syncTimeout = d
	}
}

// WithRetryBackoff sets the delays between attempts to engage a cluster
// that failed: base after the first failure, doubling up to max. Default
// DefaultRetryBaseDelay and DefaultRetryMaxDelay.
func WithRetryBackoff(base, max time.Duration) Option {
	return func(c *config) {
		if base <= 0 || max < base {
			c.errs = append(c.errs, fmt.Errorf("retry backoff needs 0 < base <= max, got %s and %s", base, max))
		}
		c.retryBase, c.retryMax = base, max
	}
}

// WithProbeInterval sets how often an engaged cluster is asked for its
// version. After three failed probes in a row the cluster is stopped (its
// reconciles cancelled, its keys held) and engaged again with the retry
// backoff, reported by Status meanwhile. Each probe may take the interval,
// at most ten seconds, and goes through the cluster's client but not
// through its client-side rate limiter (the QPS and Burst of its config):
// a cluster whose reconciles keep that limiter busy is not taken for one
// that stopped answering. Default DefaultProbeInterval; d must be
// positive.
func WithProbeInterval(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs = append(c.errs, fmt.Errorf("probe interval must be positive, got %s", d))
		}
		c.probeInterval = d
	}
}

// WithResync sets the resync period of every cluster's informer factory.
// Default 0: no resync.
func WithResync(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.errs = append(c.errs, fmt.Errorf("resync period must not be negative, got %s", d))
		}
		c.resync = d
	}
}

// WithClients sets how a member's client is built from its config; tests
// give every cluster a fake clientset of its own this way. Default
// kubernetes.NewForConfig.
//
// newClient is called at each attempt to engage the cluster, on a
// goroutine of its own. Its ctx carries the Fleet's logger and ends when
// the cluster leaves, its config changes, it moves to another replica or
// the Fleet stops, and when the sync timeout (WithSyncTimeout) has
// passed: a constructor that talks to the cluster (discovery, a
// credentials exchange) must return once ctx ends. An error it returns,
// a nil client or a panic fails the attempt, which is retried after the
// backoff.
//
// What is guaranteed if it does not return: a cluster that leaves, changes
// or moves stops at once, without waiting for it (whatever it returns
// later is dropped), so it can be deleted and engaged again; and Run,
// once every cluster has stopped, waits for constructors still running at
// most one second, then returns an error saying so and leaves their
// goroutines behind. While the cluster stays a member, a constructor that
// ignores the sync timeout holds its attempt: the cluster is neither
// ready nor failed until it returns. The engage function given to New is
// run the same way (see EngageFunc).
func WithClients(newClient func(ctx context.Context, cluster string, cfg *rest.Config) (kubernetes.Interface, error)) Option {
	return func(c *config) {
		if newClient == nil {
			c.errs = append(c.errs, errors.New("client constructor is nil"))
			return
		}
		c.newClient = newClient
	}
}
