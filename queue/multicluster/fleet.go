package multicluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/events"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/internal/engagement"
	"github.com/ctrlkit/ctrlkit/queue/shard"
)

// ErrLeft is the cause of the context of a reconcile cancelled because its
// cluster left the fleet, moved to another replica (then wrapping the
// shard's own cause), changed credentials or stopped answering its probes:
// errors.Is(context.Cause(ctx), ErrLeft) holds. A normal stop of the
// Fleet cancels no reconcile itself: the controllers cancel theirs after
// their shutdown timeout, with their own cause.
var ErrLeft = errors.New("the cluster left")

// errStopping fails an attempt that would make a cluster ready while the
// Fleet stops.
var errStopping = errors.New("the fleet stops")

// errFleetStopped is the cause logged for a cluster disengaged because
// the Fleet stopped, rather than because it left.
var errFleetStopped = errors.New("the fleet stopped")

// Cluster is one member cluster while a Fleet holds it. Its informers run
// and its recorder writes events as long as the Fleet holds the cluster.
type Cluster struct {
	// Name is the cluster's name, as its Provider reports it.
	Name string
	// Config is the config the Provider gave for it.
	Config *rest.Config
	// Client is the cluster's client.
	Client kubernetes.Interface
	// Informers is the cluster's informer factory, started once the
	// engage function returns and shut down when the cluster leaves.
	Informers informers.SharedInformerFactory
	// Recorder records events in the cluster, as the fleet's component.
	Recorder record.EventRecorderLogger

	m *member
	// mu guards factories, slots and queues: an engage function the
	// attempt stopped waiting for may still add to them.
	mu        sync.Mutex
	factories []informer.Factory
	slots     map[queueSlot]int // queues passed to Queue so far, per slot without its n
	queues    queues            // the queues passed to Queue
}

// AddInformers makes the Fleet start f with the cluster's own factory and
// wait for its caches before the cluster's keys run, and shut it down
// when the cluster leaves: for the informer factories of generated
// clientsets built from Config. A factory with a StartWithContext method
// (as client-go's generated factories have) is started with it, with a
// context of the member's that ends when the member stops and whose
// logger names the cluster; one without, with Start. Call it from the
// engage function.
func (c *Cluster) AddInformers(f informer.Factory) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.factories = append(c.factories, f)
}

// informerFactories returns the cluster's informer factories.
func (c *Cluster) informerFactories() []informer.Factory {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.factories)
}

// Queue returns a queue for the handlers of the cluster's informers that
// passes their keys to q as Keys of this cluster, as in
// informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(ctrl)). Keys that
// arrive before the cluster's caches have synced are held and passed on
// once they have, so no key of the initial list is lost. The same holds
// whenever the cluster is not ready while it is this replica's member:
// engaged again after failed probes, or with new credentials. Keys that
// arrive after the cluster left (or moved to another replica), or once
// the Fleet stops, are dropped.
//
// An attempt that engages the cluster again makes new informers, whose
// first list shows the cluster as it is. A deletion the old informers
// still see (they run on while a cluster whose probes failed drains) is
// held and reconciled once the cluster is ready; an object deleted after
// they stopped (during the backoff, or once the engagement of old
// credentials left) is not in the new list and reaches no handler, as after a restart of a single-cluster operator; nor does a
// deletion that arrives as an attempt's informers are shut down (client-go
// drops the notifications it has not handed out yet). Cleanup that must
// happen for every deleted object belongs behind a finalizer, which holds
// the deletion until a reconcile removes it.
//
// The keys held for one q are one set across every attempt to engage the
// cluster (with every config it had meanwhile), passed on once, to the q
// of the attempt that made the cluster ready. That q stands for a q of an
// earlier attempt if it is the same pointer (a controller), or else if
// the engage function passed it in the same place: as the n-th q of its
// type (and, for a function, of its code) that it passes to Queue. An
// engage function that makes its queues anew at every attempt (an
// informer.QueueFunc, a wrapper around a controller) in the same order
// has its keys reach the queue meant for them; the keys held for a queue
// for which the attempt that made the cluster ready passed none are
// dropped.
func (c *Cluster) Queue(q informer.Queue[Key]) informer.Queue[cache.ObjectName] {
	token, slot := c.register(q)
	return &clusterQueue{m: c.m, q: q, token: token, slot: slot}
}

// queueSlot names a queue across the attempts to engage a cluster: the
// n-th queue of its type and code passed to Cluster.Queue by one
// attempt's engage function.
type queueSlot struct {
	typ  reflect.Type
	code uintptr // a function's code; 0 for other kinds
	n    int
}

// register notes that the engage function passed q to Queue, and returns
// what the keys held for q are filed under (q itself when it is a
// pointer, otherwise its slot) and its slot.
func (c *Cluster) register(q informer.Queue[Key]) (token any, slot queueSlot) {
	v := reflect.ValueOf(q)
	slot = queueSlot{typ: v.Type()}
	if v.Kind() == reflect.Func && !v.IsNil() {
		slot.code = v.Pointer()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slots == nil {
		c.slots = map[queueSlot]int{}
		c.queues = queues{byToken: map[any]informer.Queue[Key]{}, bySlot: map[queueSlot]any{}}
	}
	n := c.slots[slot]
	c.slots[slot] = n + 1
	slot.n = n
	token = slot
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		token = q
	}
	c.queues.byToken[token] = q
	c.queues.bySlot[slot] = token
	return token, slot
}

// registered returns the queues passed to Queue so far.
func (c *Cluster) registered() queues {
	c.mu.Lock()
	defer c.mu.Unlock()
	return queues{byToken: maps.Clone(c.queues.byToken), bySlot: maps.Clone(c.queues.bySlot)}
}

// EngageFunc prepares a joining cluster: it registers handlers on the
// cluster's informers (through Cluster.Queue), builds the clients and
// listers the reconciler needs and returns them as the value the fleet
// hands to reconciles of the cluster's keys. ctx ends when the cluster
// leaves (or changes, moves, or the Fleet stops). An error or a panic
// fails this attempt; the cluster is tried again after a backoff.
//
// It runs on a goroutine of its own: once ctx has ended the Fleet stops
// waiting for it, so one that ignores ctx (blocked on a member that does
// not answer) keeps neither the cluster from leaving nor Run from
// returning; what it returns later is dropped. Run waits for engage
// functions still running at most one second after the clusters stopped,
// then returns an error saying so and leaves them behind.
type EngageFunc[T any] func(ctx context.Context, cl *Cluster) (T, error)

// Status is what a Fleet knows of one member cluster.
type Status struct {
	// Ready is true while the cluster's caches are synced and its keys
	// run.
	Ready bool
	// Err is why the cluster is not ready: the error of the last failed
	// attempt to engage it (nil once an attempt succeeded), or, for a
	// cluster its Provider refused (see Refuser), the refusal.
	Err error
	// Failures counts the failed attempts since the last success.
	Failures int
	// Since is when Ready or Err last changed (or, until then, when the
	// engagement started): a failed attempt with the same error as the
	// last does not move it.
	Since time.Time
}

// Fleet holds the member clusters of one operator: it engages each cluster
// a Provider reports (and, with WithSharding, this replica owns), gives its
// keys to the fleet's controllers once its caches have synced, and stops
// it cleanly when it leaves. A Fleet is an operator.Controller (Run,
// HasSynced) and a queue.Ownership (of the ready clusters' keys); the
// controllers built with NewController are restricted by it, and hold
// the keys of its clusters that are not ready until they are.
type Fleet[T any] struct {
	name     string
	provider Provider
	engage   EngageFunc[T]
	cfg      config
	// building counts the client constructors running (buildClient),
	// engaging the engage functions (callEngage), which Run waits for
	// at most cfg.clientWait.
	building sync.WaitGroup
	engaging sync.WaitGroup
	gate     *shard.Gate[string] // nil without sharding

	// mu guards everything below, the engagements of set and the members'
	// fields but their done channels.
	mu sync.Mutex
	// set holds the engagements of the members wanted (what the Provider
	// reports) and, if sharded, owned: the rules of when a cluster may
	// be engaged and its keys reconciled are set's.
	set *engagement.Set[*rest.Config]
	// keys holds the keys of the clusters that are not ready.
	keys      *keeper
	members   map[string]*member     // one per engagement set holds
	synced    bool                   // the Provider reported its first list
	tried     map[string]bool        // members tried at least once, until hasSynced
	first     []string               // the names of that list, until hasSynced
	hasSynced bool                   // HasSynced returned true
	onLeave   []func(cluster string) // called once f.mu is released, with the names of the members that left
	onSynced  []func()               // called once, f.mu not held, when HasSynced is first seen true after a change (runSyncedHooks)
	// onNotReady is called, f.mu held, with the name of a member that
	// goes not ready, or starts to be engaged (again); onStop once, f.mu not held, when the Fleet
	// starts to stop (stopAll).
	onNotReady []func(cluster string)
	onStop     []func()
	// watchers are told of every change of a member's Status: one per
	// OnMembers Watch. (Results does not watch: it hears of the members
	// that leave through onLeave.)
	watchers []*memberWatch
	refused  map[string]Status // why the Provider refused a member, until it is Set or Deleted
	started  bool
	kick     chan struct{}
	// stopping is closed when the Fleet starts to stop (stopAll).
	stopping chan struct{}
}

// member is one engagement of a cluster: from the start of its first
// attempt to the end of its stop. Its fields but done are guarded by the
// Fleet's mu.
type member struct {
	name string
	e    *engagement.Engagement[*rest.Config]
	mu   *sync.Mutex // the Fleet's
	keys *keeper     // the Fleet's
	// done is closed when the goroutine running the engagement returns.
	done   chan struct{}
	value  any
	status Status
	// stopProbe ends the probes of the ready cluster, when the Fleet
	// stops; nil while the cluster is not ready.
	stopProbe context.CancelFunc
	// inflight holds the contexts of the reconciles holding a claim on
	// the cluster, as their controllers gave them.
	inflight map[*struct{}]context.Context
	// abandoned is true if the stop gave up waiting for its reconciles.
	abandoned bool
}

// lockedReady reports whether m is ready and not told to leave: its keys
// pass straight to their queues. The Fleet's mu is held.
func (m *member) lockedReady() bool { return m.e.Phase() == engagement.Ready && !m.e.Leaving() }

var _ queue.Ownership[Key] = (*Fleet[struct{}])(nil)

// New returns a Fleet named name (its logs, metrics, events and, with
// WithSharding, the keys it shares) over the members p reports, each
// prepared by engage, which is called on a goroutine of its own at each
// attempt to engage a member (see EngageFunc).
func New[T any](name string, p Provider, engage EngageFunc[T], opts ...Option) (*Fleet[T], error) {
	c := config{metrics: noopMetrics{}, syncTimeout: DefaultSyncTimeout, retryBase: DefaultRetryBaseDelay, retryMax: DefaultRetryMaxDelay, probeInterval: DefaultProbeInterval,
		newClient: func(_ context.Context, _ string, cfg *rest.Config) (kubernetes.Interface, error) {
			return kubernetes.NewForConfig(cfg)
		},
		clientWait: clientStopTimeout}
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	switch {
	case name == "":
		c.errs = append(c.errs, errors.New("name must not be empty"))
	case p == nil:
		c.errs = append(c.errs, errors.New("provider is nil"))
	case engage == nil:
		c.errs = append(c.errs, errors.New("engage function is nil"))
	}
	if err := errors.Join(c.errs...); err != nil {
		return nil, fmt.Errorf("multicluster: fleet %q: %w", name, err)
	}
	f := &Fleet[T]{name: name, provider: p, engage: engage, cfg: c,
		members: map[string]*member{}, tried: map[string]bool{}, kick: make(chan struct{}, 1), stopping: make(chan struct{})}
	var claimer engagement.Claimer
	if c.membership != nil {
		f.gate = shard.NewGate(c.membership, shard.Keys[string]{
			String: func(cluster string) string { return cluster },
			List:   f.wantedNames,
		})
		claimer = f.gate
	}
	f.set = engagement.New(claimer, sameConfig, ErrLeft)
	f.keys = &keeper{set: f.set, gate: f.gate}
	return f, nil
}

// Name returns the fleet's name.
func (f *Fleet[T]) Name() string { return f.name }

// Run runs the Provider and holds the member clusters until ctx ends; then
// it stops every cluster and returns. A stop drains: no reconcile starts
// any more, those in flight run on undisturbed (their controllers cancel
// them once their shutdown timeout has passed, see queue.WithShutdownTimeout)
// and Run waits for them before it shuts the clusters' informers down.
// The Provider (and, with WithSharding, the membership's view) keeps
// running until every cluster has stopped: only a cluster that leaves,
// moves or gets a new config meanwhile (the Provider deletes or changes
// it, say) has its reconciles cancelled at once, with ErrLeft. A reconcile
// that ignores its context is waited for at most one second after its
// controller cancelled it: then Run shuts its cluster down all the same,
// leaves it behind and returns an error naming the cluster. It returns
// the Provider's error if the Provider fails, and an error if a client
// constructor (WithClients) or an engage function still ran one second
// after the clusters stopped: Run does not wait longer for one that
// ignores its context. A Fleet runs once.
func (f *Fleet[T]) Run(ctx context.Context) error {
	f.mu.Lock()
	if f.started {
		f.mu.Unlock()
		return fmt.Errorf("multicluster: fleet %q: Run called twice", f.name)
	}
	f.started = true
	f.mu.Unlock()
	logger := klog.FromContext(ctx).WithValues("fleet", f.name)
	ctx = klog.NewContext(ctx, logger)

	// The engagements outlive ctx: a stop lets their reconciles finish
	// before it ends them.
	engageCtx, cancelEngagements := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelEngagements()
	// The Provider and the shard gate outlive ctx too: a member that
	// leaves or moves while the clusters stop has its reconciles
	// cancelled at once, so they report until every cluster has stopped.
	sourceCtx, stopSources := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSources()
	var wg sync.WaitGroup
	provided := make(chan error, 1)
	wg.Go(func() { provided <- f.provider.Run(sourceCtx, members[T]{f}) })
	if f.gate != nil {
		wg.Go(func() { f.gate.Start(sourceCtx, kicker{f.kick}) })
	}
	var err error
	providerFailed := func(perr error) {
		if perr != nil {
			err = fmt.Errorf("multicluster: fleet %q: provider: %w", f.name, perr)
		}
		provided = nil // it has nothing more to report
	}
	for running := true; running; {
		select {
		case <-ctx.Done():
			running = false
		case perr := <-provided:
			providerFailed(perr)
			running = perr == nil
		case <-f.kick:
			f.converge(engageCtx)
		}
	}
	stopped := make(chan error, 1)
	go func() { stopped <- f.stopAll(ctx) }()
	var stopErr error
	for stopping := true; stopping; {
		select {
		case stopErr = <-stopped:
			stopping = false
		case perr := <-provided:
			providerFailed(perr)
		case <-f.kick:
			f.mu.Lock()
			f.set.LeaveUnwanted()
			f.mu.Unlock()
		}
	}
	stopSources()
	wg.Wait()
	return errors.Join(err, stopErr, f.awaitClients(ctx))
}

// converge starts the clusters that are wanted and owned and not running,
// and stops those that are running but no longer wanted, owned, or
// current.
func (f *Fleet[T]) converge(ctx context.Context) {
	f.mu.Lock()
	started, forgotten := f.set.Converge(ctx)
	leave := f.lockedForget(forgotten)
	f.keys.lockedPrune()
	for _, e := range started {
		m := &member{name: e.Name(), e: e, mu: &f.mu, keys: f.keys, done: make(chan struct{}), status: Status{Since: time.Now()}}
		f.members[m.name] = m
		f.lockedNote(m.name)     // joined
		f.lockedNotReady(m.name) // (again, with new credentials: not ready until engaged)
		go f.runMember(m)
	}
	f.mu.Unlock()
	leave()
}

// lockedForget drops the members that have stopped, with what was kept
// for them: their metrics series, and, in the function it returns, which
// the caller calls once f.mu is released, the controllers' retry limiters
// and the results of Results of those that left (no longer wanted, or
// owned, now or at any time since the engagement was told to leave, even
// if reported again since): a member engaged again for new credentials
// only, or stopped with the Fleet, keeps them. f.mu is held.
func (f *Fleet[T]) lockedForget(names []string) (leave func()) {
	var left []string
	for _, name := range names {
		departed := f.members[name] != nil && f.members[name].e.Departed()
		delete(f.members, name)
		f.cfg.metrics.ForgetCluster(f.name, name)
		f.lockedNote(name) // left
		if departed || !f.set.IsWanted(name) || (f.gate != nil && !f.gate.Owns(name)) {
			left = append(left, name)
		}
	}
	hooks := slices.Clone(f.onLeave)
	return func() {
		for _, name := range left {
			for _, fn := range hooks {
				fn(name)
			}
		}
	}
}

// lockedNotReady calls the onNotReady hooks for cluster, which is not
// ready now. f.mu is held.
func (f *Fleet[T]) lockedNotReady(cluster string) {
	for _, fn := range f.onNotReady {
		fn(cluster)
	}
}

// lockedNote tells the watchers that the Status of cluster changed. f.mu
// is held.
func (f *Fleet[T]) lockedNote(cluster string) {
	for _, w := range f.watchers {
		w.note(cluster)
	}
}

// runMember engages m until its context ends, then stops it. A failed
// attempt, or a cluster that stops answering its probes, is tried again
// after a backoff.
func (f *Fleet[T]) runMember(m *member) {
	ctx := m.e.Context()
	logger := klog.FromContext(ctx).WithValues("cluster", m.name)
	ctx = klog.NewContext(ctx, logger)
	defer func() {
		close(m.done)
		signal(f.kick)
	}()
	delay := f.cfg.retryBase
	for {
		stop, client, err := f.attempt(ctx, m)
		if err == nil {
			logger.Info("Cluster engaged")
			delay = f.cfg.retryBase
			probeCtx, stopProbe := context.WithCancel(ctx)
			f.mu.Lock()
			m.stopProbe = stopProbe
			if f.keys.stopping {
				stopProbe()
			}
			f.mu.Unlock()
			err = f.probe(probeCtx, client)
			f.mu.Lock()
			m.stopProbe = nil
			f.mu.Unlock()
			stopProbe()
		}
		if f.disengage(m, stop) {
			f.end(m)
			f.mu.Lock()
			left := !f.keys.stopping || !f.set.IsWanted(m.name) || (f.gate != nil && !f.gate.Owns(m.name))
			f.mu.Unlock()
			cause := context.Cause(ctx)
			if !left {
				cause = errFleetStopped
			}
			logger.Info("Cluster disengaged", "cause", cause)
			return
		}
		f.cfg.metrics.IncEngageFailures(f.name, m.name)
		f.mu.Lock()
		m.status.Failures++
		if !sameErr(m.status.Err, err) {
			f.lockedNote(m.name) // a new reason
			m.status.Since = time.Now()
		}
		m.status.Err = err
		failures := m.status.Failures
		f.mu.Unlock()
		f.markTried(m.name)
		logger.Error(err, "Cluster not engaged; trying again", "failures", failures, "retryIn", delay)
		select {
		case <-ctx.Done():
			f.end(m)
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, f.cfg.retryMax)
	}
}

// probe asks the cluster for its version every probe interval until ctx
// ends (it returns nil) or probeFailures probes in a row failed (it returns
// the last error): a cluster that stopped answering is then engaged again,
// its keys waiting meanwhile, rather than failing every reconcile.
func (f *Fleet[T]) probe(ctx context.Context, client kubernetes.Interface) error {
	tick := time.NewTicker(f.cfg.probeInterval)
	defer tick.Stop()
	failed := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		err := probeOnce(ctx, client, min(f.cfg.probeInterval, probeTimeout))
		if err == nil {
			failed = 0
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		if failed++; failed >= probeFailures {
			return fmt.Errorf("not answering: %w", err)
		}
	}
}

// probeFailures is how many probes in a row must fail for a cluster to be
// engaged again; probeTimeout bounds each probe.
const (
	probeFailures = 3
	probeTimeout  = 10 * time.Second
)

// probeOnce asks for the cluster's version, within timeout. The request
// goes through the member's own transport (its address, credentials and
// connections) but not through its client-side rate limiter, which the
// member's reconciles share: a member whose reconciles keep the limiter
// busy still answers its probes, and only a member that does not answer
// fails them.
func probeOnce(ctx context.Context, client kubernetes.Interface, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rc := client.Discovery().RESTClient()
	if rc == nil {
		// A client without a REST client (a fake clientset, a wrapper)
		// takes no context: its answer is awaited within the timeout,
		// and one that hangs is abandoned (the call ends when it
		// answers).
		answer := make(chan error, 1)
		go func() {
			_, err := client.Discovery().ServerVersion()
			answer <- err
		}()
		select {
		case err := <-answer:
			return err
		case <-ctx.Done():
			return fmt.Errorf("asking for the version: %w", context.Cause(ctx))
		}
	}
	return rc.Get().Throttle(nil).AbsPath("/version").Do(ctx).Error()
}

// attempt builds the cluster's clients, calls engage, starts the informers
// and waits for their caches; on success the member is ready. stop shuts
// down what the attempt started; the caller calls it.
func (f *Fleet[T]) attempt(ctx context.Context, m *member) (stop func(), client kubernetes.Interface, err error) {
	actx, cancel := context.WithCancel(ctx)
	f.mu.Lock()
	cl := &Cluster{Name: m.name, Config: m.e.Config(), m: m}
	leaving := m.e.Leaving()
	f.mu.Unlock()
	stop = func() {
		cancel()
		for _, fac := range cl.informerFactories() {
			fac.Shutdown()
		}
	}
	if leaving {
		// Told to leave (or to stop) before this attempt began, as its
		// backoff ended: no client is built, no engage function called.
		if err := context.Cause(ctx); err != nil {
			return stop, nil, err
		}
		return stop, nil, ErrLeft
	}
	cl.Client, err = f.buildClient(ctx, m.name, cl.Config)
	switch {
	case err != nil:
		return stop, nil, fmt.Errorf("client: %w", err)
	case cl.Client == nil:
		return stop, nil, errors.New("client: the constructor returned none")
	}
	cl.Informers = informers.NewSharedInformerFactory(cl.Client, f.cfg.resync)
	cl.AddInformers(cl.Informers)
	cl.Recorder, err = events.NewRecorder(actx, cl.Client, f.name)
	if err != nil {
		return stop, nil, err
	}
	value, err := f.callEngage(ctx, actx, cl)
	if err != nil {
		return stop, nil, fmt.Errorf("engage: %w", err)
	}
	// The keys held so far are filed under this attempt's queues: one
	// set per queue however many attempts made their queues anew.
	qs := cl.registered()
	f.mu.Lock()
	f.keys.lockedAdopt(m.name, qs, false)
	f.mu.Unlock()
	syncCtx, cancelSync := context.WithTimeout(actx, f.cfg.syncTimeout)
	defer cancelSync()
	factories := cl.informerFactories()
	for _, fac := range factories {
		// The context form, where the factory offers it: its
		// informers log with the member's logger.
		if s, ok := fac.(interface{ StartWithContext(context.Context) }); ok {
			s.StartWithContext(actx)
		} else {
			fac.Start(actx.Done())
		}
	}
	for _, fac := range factories {
		for typ, ok := range fac.WaitForCacheSync(syncCtx.Done()) {
			if !ok {
				return stop, nil, fmt.Errorf("informer of %s did not sync within %s", typ, f.cfg.syncTimeout)
			}
		}
	}
	f.mu.Lock()
	if f.keys.stopping || !m.e.Ready() {
		f.mu.Unlock()
		if err := context.Cause(ctx); err != nil {
			return stop, nil, err
		}
		return stop, nil, errStopping
	}
	m.value = value
	m.status = Status{Ready: true, Since: time.Now()}
	f.lockedNote(m.name) // ready
	release := f.keys.lockedTake(m.name, qs)
	f.mu.Unlock()
	// Outside the lock: the controllers ask the Fleet whether it owns
	// each key.
	release()
	f.cfg.metrics.SetClusterReady(f.name, m.name, true)
	f.markTried(m.name)
	return stop, cl.Client, nil
}

// clientStopTimeout is how long Run waits, once every cluster has
// stopped, for client constructors and engage functions that are still
// running, and, during the stop, for reconciles after their controllers
// cancelled them.
const clientStopTimeout = time.Second

// callEngage calls the engage function on a goroutine of its own, with
// actx (the attempt's), and returns what it returns; a panic fails the
// attempt, logged with its stack. Once ctx (the member's) has ended it
// returns ctx's cause at once: an engage function that ignores its
// context does not keep the member from stopping; what it returns later
// is dropped, and Run waits for it at most cfg.clientWait.
func (f *Fleet[T]) callEngage(ctx, actx context.Context, cl *Cluster) (any, error) {
	type engaged struct {
		value any
		err   error
	}
	done := make(chan engaged, 1)
	f.engaging.Add(1)
	go func() {
		defer f.engaging.Done()
		var e engaged
		defer func() {
			if r := recover(); r != nil {
				e = engaged{err: fmt.Errorf("the engage function panicked: %v", r)}
				klog.FromContext(ctx).Error(e.err, "Engage function panicked", "stack", string(debug.Stack()))
			}
			done <- e
		}()
		e.value, e.err = f.engage(actx, cl)
	}()
	select {
	case e := <-done:
		return e.value, e.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// buildClient calls the client constructor on a goroutine of its own, with
// a context that ends with ctx (the member's) or after the sync timeout,
// and returns what it returns. Once ctx has ended it returns ctx's cause
// at once: a constructor that ignores its context does not keep the
// member from stopping; what it returns later is dropped, and Run waits
// for it at most cfg.clientWait.
func (f *Fleet[T]) buildClient(ctx context.Context, cluster string, cfg *rest.Config) (kubernetes.Interface, error) {
	type built struct {
		client kubernetes.Interface
		err    error
	}
	done := make(chan built, 1)
	bctx, cancel := context.WithTimeoutCause(ctx, f.cfg.syncTimeout, fmt.Errorf("no client within the sync timeout (%s)", f.cfg.syncTimeout))
	f.building.Add(1)
	go func() {
		defer f.building.Done()
		defer cancel()
		var b built
		defer func() {
			if r := recover(); r != nil {
				b = built{err: fmt.Errorf("the constructor panicked: %v", r)}
				klog.FromContext(ctx).Error(b.err, "Client constructor panicked", "stack", string(debug.Stack()))
			}
			done <- b
		}()
		b.client, b.err = f.cfg.newClient(bctx, cluster, cfg)
	}()
	select {
	case b := <-done:
		return b.client, b.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// awaitClients waits for the client constructors and engage functions
// still running, at most cfg.clientWait in all, and reports those that
// ignored their ended context.
func (f *Fleet[T]) awaitClients(ctx context.Context) error {
	kinds := []struct {
		what string
		wg   *sync.WaitGroup
		done chan struct{}
	}{{what: "client constructors", wg: &f.building}, {what: "engage functions", wg: &f.engaging}}
	for i := range kinds {
		kinds[i].done = make(chan struct{})
		go func() {
			kinds[i].wg.Wait()
			close(kinds[i].done)
		}()
	}
	timer := time.NewTimer(f.cfg.clientWait)
	defer timer.Stop()
	var late []string
	for _, k := range kinds {
		select {
		case <-k.done:
			continue
		case <-timer.C:
		}
		for _, k := range kinds {
			select {
			case <-k.done:
			default:
				late = append(late, k.what)
			}
		}
		break
	}
	if len(late) == 0 {
		return nil
	}
	err := fmt.Errorf("multicluster: fleet %q: %s still running %s after the stop, their contexts ended: left behind", f.name, strings.Join(late, " and "), f.cfg.clientWait)
	klog.FromContext(ctx).Error(err, "Returning with client constructors or engage functions that ignore their context")
	return err
}

// disengage stops m: no new claims, its reconciles cancelled and waited
// for, then its informers shut down (stop). It reports whether this was
// the last time (the member's context ended): the member must then end;
// otherwise it is engaged again later. When the Fleet stops, the
// reconciles are not cancelled but awaited (their controllers cancel them
// after their shutdown timeout), unless the member leaves meanwhile, and
// this is the last time. While the Fleet stops, the wait gives up
// cfg.clientWait after every reconcile's own context ended (its
// controller cancelled it), marking m abandoned.
func (f *Fleet[T]) disengage(m *member, stop func()) (final bool) {
	abandon := false
	var giveUp time.Time // when the waits below give up, once known
	f.mu.Lock()
	if f.keys.stopping && !m.e.Leaving() {
		quiesced := m.e.Quiesce()
		f.mu.Unlock()
		left := m.e.Context().Done()
		if !f.awaitDrained(m, quiesced, left, &giveUp) {
			select {
			case <-left: // its reconciles are cancelled and awaited below
			default:
				abandon = true
			}
		}
		f.mu.Lock()
		m.e.Leave()
	}
	drained, final := m.e.Drain()
	if m.status.Ready {
		f.lockedNote(m.name) // not ready
		f.lockedNotReady(m.name)
		m.status.Since = time.Now()
	}
	m.status.Ready = false
	m.value = nil // not handed out until ready again: its caches may go
	f.mu.Unlock()
	// No claim starts once drained; each ends when its reconcile
	// returns.
	if abandon || !f.awaitDrained(m, drained, nil, &giveUp) {
		f.mu.Lock()
		m.abandoned = true
		f.mu.Unlock()
	}
	stop()
	f.cfg.metrics.SetClusterReady(f.name, m.name, false)
	return final
}

// awaitDrained waits until drained is closed (it returns true) or left
// is (false). While the Fleet stops, it also gives up (false) once the
// contexts of m's reconciles in flight have all ended (their controllers
// cancelled them) and cfg.clientWait has passed since: a reconcile that
// ignores its context does not keep Run from returning. giveUp is when
// it gives up, set by the first wait that knows it and kept by the next,
// so that two waits for one member give up at the same time.
func (f *Fleet[T]) awaitDrained(m *member, drained, left <-chan struct{}, giveUp *time.Time) bool {
	select {
	case <-drained:
		return true
	case <-left:
		return false
	case <-f.stopping:
	}
	f.mu.Lock()
	ctxs := make([]context.Context, 0, len(m.inflight))
	for _, c := range m.inflight {
		ctxs = append(ctxs, c)
	}
	f.mu.Unlock()
	// No claim is granted any more: ctxs are all there are.
	for _, c := range ctxs {
		select {
		case <-drained:
			return true
		case <-left:
			return false
		case <-c.Done():
		}
	}
	if giveUp.IsZero() {
		*giveUp = time.Now().Add(f.cfg.clientWait)
	}
	timer := time.NewTimer(time.Until(*giveUp))
	defer timer.Stop()
	select {
	case <-drained:
		return true
	case <-left:
		return false
	case <-timer.C:
		return false
	}
}

// end ends m's engagement, which releases its shard claim on the cluster.
func (f *Fleet[T]) end(m *member) {
	f.mu.Lock()
	m.e.End()
	f.mu.Unlock()
}
