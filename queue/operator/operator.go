// Package operator runs a whole operator in one call: the informer
// factories its controllers share, the controllers (behind leader election
// if asked), the /healthz, /readyz and /metrics endpoints, and the
// webhooks' HTTPS server (WithWebhooks), started and stopped in the right
// order. It is a function, not a manager object:
// everything it runs is built by the caller from plain client-go types and
// the other ctrlkit packages.
//
//	return operator.Run(ctx,
//		operator.WithInformers(kubeInformers),
//		operator.WithControllers(ctrl),
//		operator.WithProbes(":8081"),
//	)
//
// Run starts the probe and metrics servers, then the informer factories,
// waits for their caches (at most the cache sync timeout, see
// WithCacheSyncTimeout), and runs the controllers until ctx ends. On
// cancellation it stops the controllers first (each drains its in-flight
// reconciles), then the informers, then the servers. The first error of any
// part stops all the others and is returned.
//
// Flags binds the command-line flags every operator has (kubeconfig, client
// rate limits, leader election or sharding, endpoint addresses, timeouts,
// the managedFields transform), hands out what they imply (Informers,
// ControllerOptions, Metrics, Shard, Options), and its Main method runs an
// operator's main function with a signal-handling context:
//
//	kubeInformers := operator.Informers(&flags, func(transform cache.TransformFunc) kubeinformers.SharedInformerFactory {
//		return kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0, kubeinformers.WithTransform(transform))
//	})
//	ctrl, err := queue.New("configmaps", reconciler, flags.ControllerOptions()...)
//	if err != nil {
//		return err
//	}
//	configMaps := kubeInformers.Core().V1().ConfigMaps()
//	if err := ctrl.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))); err != nil {
//		return err
//	}
//	return operator.Run(ctx, append(flags.Options(kubeClient), operator.WithControllers(ctrl))...)
package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/queue/leader"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/webhook"
)

// Controller is what Run runs. *queue.Controller is one; so is any type
// with these methods, such as a controller that embeds one.
type Controller interface {
	// Run runs until ctx is cancelled, then stops gracefully.
	Run(ctx context.Context) error
	// HasSynced reports whether the controller is ready to work; /readyz
	// reports ready only when every controller's HasSynced does.
	HasSynced() bool
}

// DefaultCacheSyncTimeout is the cache sync timeout of Run when
// WithCacheSyncTimeout is not given.
const DefaultCacheSyncTimeout = 2 * time.Minute

// ErrCacheSyncTimeout is wrapped by the error of Run when informers or
// controllers did not sync within the cache sync timeout.
var ErrCacheSyncTimeout = errors.New("caches did not sync in time")

// Option configures Run. A nil Option is ignored.
type Option func(*config)

type config struct {
	factories        []informer.Factory
	controllers      []Controller
	election         *leader.Config
	sharding         *shard.Membership
	readyLeader      bool
	probeAddr        string
	metricsAddr      string
	metrics          http.Handler
	pprofAddr        string
	checks           []check
	cacheSyncTimeout time.Duration
	cacheMetrics     *metrics.Recorder
	webhooks         *webhook.Server
	tracer           interface{ Shutdown(context.Context) error }
	errs             []error

	// unhealthy is the error that makes /healthz fail, once there is one.
	unhealthy atomic.Pointer[error]
}

type check struct {
	name string
	fn   func(*http.Request) error
}

// WithInformers gives Run the informer factories the controllers share.
// They are started once the servers listen and shut down after the
// controllers have stopped. Controllers must have requested their informers
// (by building them with these factories) before Run starts. A factory
// with an Err method that reports an error (an optional.APIs built wrong)
// is refused: Run returns that error and runs nothing. A factory with a
// StartWithContext method is started with it, with a context of Run's and
// so its logger; another with Start.
func WithInformers(factories ...informer.Factory) Option {
	return func(c *config) {
		for _, f := range factories {
			if f == nil {
				c.errs = append(c.errs, errors.New("informer factory is nil"))
				continue
			}
			if e, ok := f.(interface{ Err() error }); ok {
				if err := e.Err(); err != nil {
					c.errs = append(c.errs, fmt.Errorf("informer factory: %w", err))
					continue
				}
			}
			c.factories = append(c.factories, f)
		}
	}
}

// WithControllers gives Run the controllers to run.
func WithControllers(controllers ...Controller) Option {
	return func(c *config) {
		for _, ctrl := range controllers {
			if ctrl == nil {
				c.errs = append(c.errs, errors.New("controller is nil"))
				continue
			}
			c.controllers = append(c.controllers, ctrl)
		}
	}
}

// WithLeaderElection runs the controllers only while this process holds
// the Lease of cfg (see package leader). The informers and servers run on
// standby replicas too, so that a takeover finds warm caches. Losing the
// Lease makes Run return an error wrapping leader.ErrLeaseLost.
func WithLeaderElection(cfg leader.Config) Option {
	return func(c *config) { c.election = &cfg }
}

// WithSharding runs the replica's membership m (see package shard) beside
// the controllers, whose Gates it feeds, for an operator whose replicas
// share the keys. The membership starts with the controllers and stops
// after them, so that a normal stop drains first and then hands the keys
// over at once. /readyz reports ready only once the replica owns keys. A
// lost membership Lease stops Run with an error wrapping
// leader.ErrLeaseLost. Sharding and leader election exclude each other.
func WithSharding(m *shard.Membership) Option {
	return func(c *config) {
		if m == nil {
			c.errs = append(c.errs, errors.New("membership is nil"))
			return
		}
		c.sharding = m
	}
}

// WithReadinessOnlyWhenLeading makes /readyz report ready only on the
// replica that holds the Lease, for a Service that should route to the
// leader alone. By default a standby replica with synced caches is ready.
func WithReadinessOnlyWhenLeading() Option {
	return func(c *config) { c.readyLeader = true }
}

// WithProbes serves /healthz and /readyz on addr (host:port; ":0" picks a
// free port). /healthz answers 200 while the process runs, and 500 with the
// reason once the cache sync timeout (WithCacheSyncTimeout) expired: Run is
// then stopping, and returns that error. /readyz answers 200 once every
// controller's HasSynced is true and every check of WithReadyCheck passes,
// 503 with the reasons otherwise.
func WithProbes(addr string) Option {
	return func(c *config) { c.probeAddr = addr }
}

// WithReadyCheck adds a named check to /readyz.
func WithReadyCheck(name string, fn func(*http.Request) error) Option {
	return func(c *config) {
		if name == "" || fn == nil {
			c.errs = append(c.errs, errors.New("ready check needs a name and a function"))
			return
		}
		c.checks = append(c.checks, check{name: name, fn: fn})
	}
}

// WithWebhooks serves s, the operator's admission and conversion
// webhooks, over HTTPS at its address, which no other endpoint may share.
// Like the probes it is served from Run's start, before the informers
// start (a conversion webhook must answer before the operator's own
// informers can list objects stored in another version), and stopped last,
// letting requests in progress finish; /readyz reports not ready until s
// has a certificate to serve (webhook.Server's Ready).
func WithWebhooks(s *webhook.Server) Option {
	return func(c *config) {
		if s == nil {
			c.errs = append(c.errs, errors.New("webhook server is nil"))
			return
		}
		c.webhooks = s
	}
}

// WithMetrics serves handler on addr at /metrics; metrics.Handler builds one
// for a Prometheus registry.
func WithMetrics(addr string, handler http.Handler) Option {
	return func(c *config) {
		if handler == nil {
			c.errs = append(c.errs, errors.New("metrics handler is nil"))
			return
		}
		c.metricsAddr, c.metrics = addr, handler
	}
}

// WithCacheSyncTimeout bounds how long Run waits for caches: the informer
// factories' caches must sync within d of their start, and each
// controller's HasSynced must be true within d of the controller's start
// (with leader election: of this replica's start of leading). Otherwise Run
// stops everything and returns an error wrapping ErrCacheSyncTimeout that
// names the informers' types or the controllers that did not sync; /healthz
// fails with it meanwhile. An informer that cannot list (missing RBAC, a
// CustomResourceDefinition not installed) thus ends the process with a
// reason, to be restarted, instead of leaving it waiting for ever while it
// looks alive. Default DefaultCacheSyncTimeout; d must be positive.
func WithCacheSyncTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs = append(c.errs, fmt.Errorf("cache sync timeout must be positive, got %s", d))
		}
		c.cacheSyncTimeout = d
	}
}

// WithProfiling serves Go's runtime profiles (net/http/pprof: CPU, heap,
// goroutines, ...) under /debug/pprof/ on addr, which may be the metrics or
// probe address. Profiles reveal the process's internals and a CPU profile
// costs CPU while it runs: serve them on a loopback or otherwise protected
// address.
func WithProfiling(addr string) Option {
	return func(c *config) { c.pprofAddr = addr }
}

// Run runs what opts describe until ctx is cancelled or a part fails; see
// the package documentation for the order of starts and stops. It returns
// nil after a normal stop, and otherwise every error that stopped it.
func Run(ctx context.Context, opts ...Option) error {
	c := config{cacheSyncTimeout: DefaultCacheSyncTimeout}
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	logger := klog.FromContext(ctx)
	if c.tracer != nil {
		// Deferred first, so it runs last, after every part that traces
		// has stopped; and on every return path, also when an option
		// check fails, so that the provider never outlives Run.
		defer func() {
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), TracerShutdownTimeout)
			defer cancel()
			if err := c.tracer.Shutdown(flushCtx); err != nil {
				logger.Error(err, "Exporting the last spans")
			}
		}()
	}
	if len(c.controllers) == 0 {
		c.errs = append(c.errs, errors.New("no controller to run"))
	}
	if c.readyLeader && c.election == nil {
		c.errs = append(c.errs, errors.New("readiness only when leading needs leader election"))
	}
	if c.sharding != nil && c.election != nil {
		c.errs = append(c.errs, errors.New("sharding and leader election exclude each other"))
	}
	if err := errors.Join(c.errs...); err != nil {
		return fmt.Errorf("operator: %w", err)
	}

	// stopCtx ends with ctx or with the first failure.
	stopCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var leading atomic.Bool
	srv, err := serve(stopCtx, &c, func() bool { return !c.readyLeader || leading.Load() })
	if err != nil {
		return err
	}
	var errs []error
	var errsMu sync.Mutex
	fail := func(err error) {
		errsMu.Lock()
		errs = append(errs, err)
		errsMu.Unlock()
		stop(err)
	}
	srv.start(fail)
	// The webhooks' certificates are kept current until the servers stop.
	certsCtx, stopCerts := context.WithCancel(context.WithoutCancel(ctx))
	var certs sync.WaitGroup
	if c.webhooks != nil {
		certs.Go(func() {
			if err := c.webhooks.Run(certsCtx); err != nil {
				fail(err)
			}
		})
	}

	for _, f := range c.factories {
		if s, ok := f.(interface{ StartWithContext(context.Context) }); ok {
			s.StartWithContext(stopCtx)
		} else {
			f.Start(stopCtx.Done())
		}
	}
	syncCtx, cancelSync := context.WithTimeout(stopCtx, c.cacheSyncTimeout)
	var unsynced []string
	for _, f := range c.factories {
		var synced []reflect.Type
		for typ, ok := range f.WaitForCacheSync(syncCtx.Done()) {
			if !ok {
				unsynced = append(unsynced, typ.String())
			}
			synced = append(synced, typ)
		}
		if c.cacheMetrics != nil {
			if err := countCaches(c.cacheMetrics, f, synced); err != nil {
				logger.Error(err, "Counting the informers' caches")
			}
		}
	}
	cancelSync()
	switch {
	case len(unsynced) == 0:
		runControllers(stopCtx, &c, &leading, fail)
	case stopCtx.Err() == nil:
		slices.Sort(unsynced)
		c.syncTimedOut(fail, fmt.Sprintf("informers of %s", strings.Join(slices.Compact(unsynced), ", ")))
	default:
		logger.Info("Informers did not sync before the stop", "types", unsynced)
	}
	// The controllers have stopped: now the informers, then the servers.
	stop(nil)
	for _, f := range c.factories {
		f.Shutdown()
	}
	srv.shutdown(ctx)
	stopCerts()
	certs.Wait()
	return errors.Join(errs...)
}

// syncTimedOut makes /healthz fail and Run stop with an error that says
// what did not sync.
func (c *config) syncTimedOut(fail func(error), what string) {
	err := fmt.Errorf("operator: %w: %s did not sync within %s", ErrCacheSyncTimeout, what, c.cacheSyncTimeout)
	c.unhealthy.Store(&err)
	fail(err)
}

// syncPeriod is how often watchSync checks the controllers.
const syncPeriod = 100 * time.Millisecond

// watchSync waits until every controller's HasSynced is true and, if that
// takes longer than the cache sync timeout, fails Run naming those that
// are not. It returns at once when ctx ends.
func (c *config) watchSync(ctx context.Context, fail func(error)) {
	deadline := time.NewTimer(c.cacheSyncTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(syncPeriod)
	defer tick.Stop()
	for {
		var lagging []string
		for i, ctrl := range c.controllers {
			if !ctrl.HasSynced() {
				lagging = append(lagging, controllerName(ctrl, i))
			}
		}
		if len(lagging) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			c.syncTimedOut(fail, "controllers "+strings.Join(lagging, ", "))
			return
		case <-tick.C:
		}
	}
}

// runControllers runs the controllers, behind leader election if asked,
// until ctx ends or one fails, and returns once all have returned. While
// they run, watchSync checks that they sync in time.
func runControllers(ctx context.Context, c *config, leading *atomic.Bool, fail func(error)) {
	if c.sharding != nil {
		// The membership outlives the controllers' drain.
		memberCtx, stopMember := context.WithCancel(context.WithoutCancel(ctx))
		memberDone := make(chan struct{})
		go func() {
			defer close(memberDone)
			if err := c.sharding.Run(memberCtx); err != nil {
				fail(err)
			}
		}()
		defer func() {
			stopMember()
			<-memberDone
		}()
	}
	if c.election != nil {
		rs := make([]leader.Runnable, 0, len(c.controllers)+1)
		for _, ctrl := range c.controllers {
			rs = append(rs, ctrl)
		}
		rs = append(rs, leader.RunnableFunc(func(ctx context.Context) error {
			leading.Store(true)
			defer leading.Store(false)
			c.watchSync(ctx, fail)
			<-ctx.Done()
			return nil
		}))
		if err := leader.Run(ctx, *c.election, rs...); err != nil {
			fail(err)
		}
		return
	}
	var wg sync.WaitGroup
	for _, ctrl := range c.controllers {
		wg.Go(func() {
			if err := ctrl.Run(ctx); err != nil {
				fail(err)
			}
		})
	}
	wg.Go(func() { c.watchSync(ctx, fail) })
	wg.Wait()
}
