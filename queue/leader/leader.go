// Package leader runs controllers only while their process holds a
// coordination.k8s.io/v1 Lease, so that of several replicas exactly one
// writes at a time.
//
// Run campaigns for the Lease and, once it holds it, runs the given
// Runnables (queue.Controllers, typically) until its context ends. The
// order of a stop is what keeps two replicas from writing at once:
//
//   - a normal stop (ctx cancelled) stops the Runnables first, letting
//     in-flight reconciles drain while the Lease is still renewed, and
//     releases the Lease only after every Runnable has returned, so that a
//     standby replica takes over at once;
//   - a lost Lease (renewals failed for RenewDeadline) aborts the Runnables
//     at once: Runnables with an Abort(error) method, such as
//     queue.Controller, cancel their in-flight reconciles without a grace
//     period; Run returns an error wrapping ErrLeaseLost once all have
//     returned, and does not touch the Lease again. The process should exit
//     and start over as a candidate.
//
// Informers are not Run's business: start them before Run, so that a
// standby replica keeps its caches warm and takes over without listing
// anything.
//
//	err := leader.Run(ctx, leader.Config{Client: kubeClient, Namespace: "foo-system", Name: "foo-controller"}, ctrl)
//
// # Timing
//
// A leader gives up at most RetryPeriod + RenewDeadline after the answer to
// its last successful renewal; a candidate takes over no sooner than
// LeaseDuration after it saw that renewal land. The Lease records
// LeaseDuration in whole seconds and candidates wait what it records, so
// Run requires a LeaseDuration of a whole number of seconds, at least 1s.
// It also requires LeaseDuration > RenewDeadline + RetryPeriod,
// RenewDeadline > 1.2 x RetryPeriod, RetryPeriod > 0, and a request timeout
// (below) of at least 100ms. The difference LeaseDuration - RenewDeadline -
// RetryPeriod, the margin, covers two things: how long after it landed a
// renewal's answer may come, and the time an aborted Runnable has to return
// before another replica may start (reconcilers must honour their context).
// Each request of the Lease (each read, create and update that acquires,
// renews or releases it) is abandoned after min(half the margin,
// LeaseDuration - RenewDeadline, (RenewDeadline - RetryPeriod) / 2), 1.5s
// with the defaults, so an answer that comes late takes at most half the
// margin, and a request that hangs fails in time for another attempt within
// the renew deadline (client-go's elector gives all the attempts of one
// renewal a single context that ends after RenewDeadline): one slow or hung
// request to the API server does not cost the leader its Lease. An API
// server that answers every Lease request slower than that does. The bound
// assumes the replicas' monotonic clocks advance at the same rate; they
// need not agree on the time of day. A machine suspended and resumed breaks
// it: its monotonic clock stood still, so a suspended leader's Runnables
// run on after resume until its RenewDeadline, counted from before the
// suspend, runs out, while a standby may lead already (see docs/design.md).
//
// A stop releases the Lease if this replica holds it, also one that came
// before the replica led (an acquiring request abandoned at the stop may
// have landed); a release whose request hung or failed is tried again, a
// few times within RenewDeadline. A stop that finds no Lease after an
// acquiring create of this replica was abandoned (or failed without being
// refused) creates the Lease released, so that the API server, if it
// applies that create later, refuses it instead of letting it hold the
// Lease for LeaseDuration.
//
// # RBAC
//
// The identity needs get, create and update on leases in the Lease's
// namespace (group coordination.k8s.io).
package leader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/queue/internal/lease"
)

// Defaults of Config's durations, those of client-go's components.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// ErrLeaseLost is wrapped by the error of a Run that lost the Lease it
// needs: here, when the leader election Lease was lost while the Runnables
// ran; in package shard, when a replica could not renew its membership
// Lease for RenewDeadline, found it deleted or renewed by another process.
var ErrLeaseLost = errors.New("lost the Lease")

// Runnable is what runs while the Lease is held: Run runs until ctx is
// cancelled and then stops. A Runnable that also has a method Abort(cause
// error), such as queue.Controller, is aborted when the Lease is lost.
type Runnable interface {
	Run(ctx context.Context) error
}

// RunnableFunc adapts a function to the Runnable interface.
type RunnableFunc func(ctx context.Context) error

// Run calls f(ctx).
func (f RunnableFunc) Run(ctx context.Context) error { return f(ctx) }

// aborter is the optional hard stop of a Runnable.
type aborter interface{ Abort(cause error) }

// Config describes the Lease and the timing of the election. Zero durations
// select the defaults.
type Config struct {
	// Client reads and writes the Lease.
	Client kubernetes.Interface
	// Namespace and Name of the Lease.
	Namespace, Name string
	// Identity of this replica in the Lease. Default: the host name and a
	// random suffix, unique per process.
	Identity string
	// LeaseDuration is how long a candidate waits after the last renewal
	// it saw before taking the Lease over. Default DefaultLeaseDuration.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps retrying to renew before
	// it gives up. Default DefaultRenewDeadline.
	RenewDeadline time.Duration
	// RetryPeriod is how often candidates try to take the Lease and the
	// leader renews it. Default DefaultRetryPeriod.
	RetryPeriod time.Duration
}

// complete fills defaults and checks the configuration.
func (c Config) complete() (Config, error) {
	if c.Client == nil || c.Namespace == "" || c.Name == "" {
		return c, errors.New("leader: Config needs a Client, a Namespace and a Name")
	}
	if msgs := validation.IsDNS1123Subdomain(c.Name); len(msgs) > 0 {
		return c, fmt.Errorf("leader: Lease name %q: %s", c.Name, strings.Join(msgs, "; "))
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = host + "_" + string(uuid.NewUUID())
	}
	c.LeaseDuration = orDefault(c.LeaseDuration, DefaultLeaseDuration)
	c.RenewDeadline = orDefault(c.RenewDeadline, DefaultRenewDeadline)
	c.RetryPeriod = orDefault(c.RetryPeriod, DefaultRetryPeriod)
	if c.LeaseDuration < time.Second || c.LeaseDuration%time.Second != 0 {
		// The elector records int(LeaseDuration / time.Second) in the
		// Lease, and the other replicas wait what the record says.
		return c, fmt.Errorf("leader: lease duration (%s) must be a whole number of seconds, at least 1s: the Lease records it in whole seconds, and the other replicas wait what it records", c.LeaseDuration)
	}
	if err := CheckTimings(c.LeaseDuration, c.RenewDeadline, c.RetryPeriod); err != nil {
		return c, fmt.Errorf("leader: %w", err)
	}
	return c, nil
}

// CheckTimings returns an error, saying what to change, unless Run
// accepts these (non-zero) durations: leaseDuration > renewDeadline +
// retryPeriod, renewDeadline > 1.2 x retryPeriod > 0, renewDeadline > 0,
// and a request timeout (see Config) of at least 100ms. It does not check
// that leaseDuration is a whole number of seconds.
func CheckTimings(leaseDuration, renewDeadline, retryPeriod time.Duration) error {
	if leaseDuration <= renewDeadline+retryPeriod || renewDeadline <= time.Duration(leaderelection.JitterFactor*float64(retryPeriod)) ||
		retryPeriod <= 0 || renewDeadline <= 0 {
		return fmt.Errorf("need lease duration (%s) > renew deadline (%s) + retry period (%s), and renew deadline > %v x retry period > 0",
			leaseDuration, renewDeadline, retryPeriod, leaderelection.JitterFactor)
	}
	c := Config{LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod}
	t := requestTimeout(c)
	if t >= lease.MinRequestTimeout {
		return nil
	}
	// Name the term that binds, and a change that lengthens it.
	var term, advice string
	switch margin := leaseDuration - renewDeadline - retryPeriod; t {
	case margin / 2:
		term, advice = "half of lease duration - renew deadline - retry period", "lengthen the lease duration, or shorten the renew deadline or the retry period"
	case leaseDuration - renewDeadline:
		term, advice = "lease duration - renew deadline", "lengthen the lease duration or shorten the renew deadline"
	default:
		term, advice = "half of renew deadline - retry period", "shorten the retry period, or lengthen the renew deadline and the lease duration with it"
	}
	return fmt.Errorf("a Lease request may take only %s (%s), less than %s, with lease duration %s, renew deadline %s and retry period %s: %s",
		t, term, lease.MinRequestTimeout, leaseDuration, renewDeadline, retryPeriod, advice)
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Run campaigns for the Lease described by cfg and runs rs while holding it,
// each in its own goroutine, until ctx is cancelled, the Lease is lost, or a
// Runnable fails (the first error stops the others). See the package
// documentation for the order of a stop.
//
// Run returns nil when ctx ended (whether or not this replica ever led) and
// every Runnable returned nil; otherwise the Runnables' errors joined, with
// ErrLeaseLost if the Lease was lost. A configuration error is returned at
// once.
func Run(ctx context.Context, cfg Config, rs ...Runnable) error {
	cfg, err := cfg.complete()
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("lease", klog.KRef(cfg.Namespace, cfg.Name), "identity", cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	lock := &timedLock{
		Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metaOf(cfg),
			Client:     cfg.Client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
		},
		timeout: requestTimeout(cfg),
	}
	giveUp := func() { release(ctx, cfg, lock) }
	// The election outlives ctx: while the Runnables drain after a normal
	// stop, the Lease is still renewed.
	electCtx, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElecting()
	leading := make(chan context.Context, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: cfg.LeaseDuration,
		RenewDeadline: cfg.RenewDeadline,
		RetryPeriod:   cfg.RetryPeriod,
		Name:          cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaderCtx context.Context) { leading <- leaderCtx },
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != cfg.Identity {
					logger.Info("Another replica leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader: %w", err)
	}
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		elector.Run(electCtx)
	}()
	stopElection := func() {
		stopElecting()
		<-electorDone
	}

	logger.Info("Waiting to lead")
	var leaderCtx context.Context
	select {
	case leaderCtx = <-leading:
	case <-ctx.Done():
		stopElection()
		// Run nothing, but give the Lease back if this replica holds it:
		// it may have won just as ctx ended, or an acquiring request
		// abandoned at the stop may have landed. release reads the Lease
		// and writes it only if it is this replica's.
		giveUp()
		return nil
	}
	logger.Info("Became the leader")
	errs, lost := runWhileLeading(ctx, leaderCtx, rs)
	stopElection()
	if lost {
		logger.Info("Lost the Lease; every runnable has stopped")
		return errors.Join(append([]error{ErrLeaseLost}, errs...)...)
	}
	giveUp()
	return errors.Join(errs...)
}

// runWhileLeading runs rs until ctx ends, one fails, or leaderCtx ends (the
// Lease is lost), and returns their errors and whether the Lease was lost.
func runWhileLeading(ctx, leaderCtx context.Context, rs []Runnable) (errs []error, lost bool) {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	results := make(chan error, len(rs))
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() { results <- r.Run(runCtx) })
	}
	pending := len(rs)
	for pending > 0 {
		select {
		case err := <-results:
			pending--
			if err != nil {
				errs = append(errs, err)
				stop() // the first error stops the others
			}
		case <-leaderCtx.Done():
			if !lost {
				lost = true
				klog.FromContext(ctx).Info("Lost the Lease: aborting every runnable")
				for _, r := range rs {
					if a, ok := r.(aborter); ok {
						a.Abort(ErrLeaseLost)
					}
				}
				stop()
			}
			leaderCtx = context.Background() // seen; keep collecting results
		}
	}
	wg.Wait()
	return errs, lost
}

// releaseAttempts bounds the attempts of a release: each reads the Lease
// and, if this replica holds it, writes it released.
const releaseAttempts = 3

// release gives the Lease up if this replica still holds it, so that a
// standby replica takes over without waiting for it to expire. Each of its
// requests is abandoned after the request timeout of lock; an attempt
// that failed (a request that hung, a conflict, an error of the server)
// is made again, up to releaseAttempts in all and within RenewDeadline.
// Every attempt reads the Lease first, so a write that landed though its
// answer was lost is not undone, and a Lease another replica took is left
// alone.
//
// A Lease found missing is created released if an acquiring create of
// this process was abandoned or failed without being refused: the API
// server may still apply that create, which then fails instead of holding
// the Lease for LeaseDuration.
func release(ctx context.Context, cfg Config, lock *timedLock) {
	logger := klog.FromContext(ctx)
	releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.RenewDeadline)
	defer cancel()
	var err error
	for range releaseAttempts {
		var rec *resourcelock.LeaderElectionRecord
		rec, _, err = lock.Get(releaseCtx)
		if apierrors.IsNotFound(err) && lock.createMayLand.Load() {
			// An acquiring create abandoned (or failed) before may still
			// be applied, after this read: it would hold the Lease for
			// LeaseDuration. Create the Lease released, so that such a
			// create fails.
			err = lock.Create(releaseCtx, released(resourcelock.LeaderElectionRecord{}))
			switch {
			case err == nil:
				logger.Info("Created the Lease released, so that an acquiring create abandoned before fails")
				return
			case apierrors.IsAlreadyExists(err):
				err = fmt.Errorf("creating the Lease released: %w", err)
				continue // a create landed meanwhile: the next attempt releases it
			default:
				err = fmt.Errorf("creating the Lease released: %w", err)
			}
		} else if apierrors.IsNotFound(err) {
			return
		}
		if err != nil {
			err = fmt.Errorf("reading the Lease: %w", err)
		} else {
			if rec.HolderIdentity != cfg.Identity {
				return
			}
			err = lock.Update(releaseCtx, released(*rec))
			if err == nil {
				logger.Info("Released the Lease")
				return
			}
		}
		if releaseCtx.Err() != nil || !mayPass(err) {
			break
		}
		logger.V(2).Info("Could not release the Lease; trying again", "err", err.Error())
	}
	logger.Error(err, "Could not release the Lease; it expires on its own")
}

// released is the record of a released Lease, keeping rec's count of
// leader transitions: no holder, and a duration of one second.
func released(rec resourcelock.LeaderElectionRecord) resourcelock.LeaderElectionRecord {
	now := metaNow()
	return resourcelock.LeaderElectionRecord{
		LeaderTransitions:    rec.LeaderTransitions,
		LeaseDurationSeconds: 1,
		RenewTime:            now,
		AcquireTime:          now,
	}
}

// mayPass reports whether a request that failed with err may succeed if
// sent again: not when it was refused for its content or its permissions.
func mayPass(err error) bool {
	return !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) && !apierrors.IsInvalid(err) &&
		!apierrors.IsBadRequest(err) && !apierrors.IsMethodNotSupported(err)
}

// requestTimeout is how long one request of the Lease may take: one that
// hangs is abandoned in time for another attempt within RenewDeadline,
// and one answered late leaves half the margin past RetryPeriod +
// RenewDeadline to the Runnables. The elector counts a renewal from its
// answer, the candidates from when they saw it land: a renewal answered
// later than the margin would keep this replica leading after another
// took over.
func requestTimeout(cfg Config) time.Duration {
	margin := cfg.LeaseDuration - cfg.RenewDeadline - cfg.RetryPeriod
	return min(margin/2, lease.RequestTimeout(cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod))
}

// timedLock is a resource lock whose every request of the Lease is
// abandoned after timeout. client-go's elector gives all the attempts of
// a renewal one context that ends with RenewDeadline: without a timeout
// of its own, one request that hangs would use it up, and the leader
// would lose the Lease though a retry would have renewed it.
type timedLock struct {
	resourcelock.Interface
	timeout time.Duration
	// createMayLand: a create was abandoned or failed without being
	// refused, so the API server may still apply it.
	createMayLand atomic.Bool
}

// request is the context of one request sent within ctx.
func (l *timedLock) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.timeout)
}

// Get reads the Lease, abandoning the request after the timeout.
func (l *timedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	ctx, cancel := l.request(ctx)
	defer cancel()
	return l.Interface.Get(ctx)
}

// Create creates the Lease, abandoning the request after the timeout.
func (l *timedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	ctx, cancel := l.request(ctx)
	defer cancel()
	err := l.Interface.Create(ctx, ler)
	if err != nil && !apierrors.IsAlreadyExists(err) && mayPass(err) {
		l.createMayLand.Store(true)
	}
	return err
}

// Update writes the Lease, abandoning the request after the timeout.
func (l *timedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	ctx, cancel := l.request(ctx)
	defer cancel()
	return l.Interface.Update(ctx, ler)
}

func metaOf(cfg Config) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name}
}

func metaNow() metav1.Time { return metav1.NewTime(time.Now()) }
