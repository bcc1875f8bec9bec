package shard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/queue/internal/lease"
	"github.com/ctrlkit/ctrlkit/queue/leader"
)

const (
	// LabelGroup labels every member Lease with its group's name.
	LabelGroup = "shard.ctrlkit.io/group"
	// AnnotationView holds the member list a replica works under, as
	// "<generation> <name>,<name>,...".
	AnnotationView = "shard.ctrlkit.io/view"
)

// errMoved is the cause of a claim cancelled because its key moved.
var errMoved = errors.New("shard: the key moved to another replica")

// Config describes a replica's membership. Zero durations select package
// leader's defaults. The rules that bind them are close to package
// leader's, not the same: LeaseDuration > RenewDeadline + RetryPeriod,
// RenewDeadline > RetryPeriod > 0 (leader asks for more than 1.2 x
// RetryPeriod), and a write timeout, the lesser of LeaseDuration -
// RenewDeadline and (RenewDeadline - RetryPeriod) / 2, of at least
// 100ms (lease.MinRequestTimeout). Reads and deletes of a Lease are
// allowed RetryPeriod, or 100ms when RetryPeriod is shorter. A stop's
// requests (publishing that the replica left, deleting its Lease) end
// within RenewDeadline of the leave's start. LeaseDuration need not be a whole number of seconds (leader
// requires it): the Lease records it rounded up, but every member judges
// the others' Leases by its own LeaseDuration, so every member of a
// group must be given the same durations.
type Config struct {
	// Client reads and writes the Leases.
	Client kubernetes.Interface
	// Namespace holds the group's Leases.
	Namespace string
	// Group names the replicas that share the keys: the Leases carry it in
	// the label LabelGroup and start their names with it, so it must be a
	// valid label value and a DNS subdomain (lowercase alphanumerics, '-'
	// and '.').
	Group string
	// Identity of this replica, the holder of its Lease. Default: the host
	// name and a random suffix, unique per process.
	Identity string
	// LeaseDuration is how long the others wait after they last saw this
	// replica's Lease renewed before they take its keys.
	LeaseDuration time.Duration
	// RenewDeadline is how long this replica keeps trying to renew before
	// it stops reconciling. A renewal that hangs is abandoned in time to
	// try again within it (see docs/design.md); one that fails at once
	// is tried again RetryPeriod after it went, so a RenewDeadline of
	// less than twice RetryPeriod loses the Lease at the first failed
	// renewal.
	RenewDeadline time.Duration
	// RetryPeriod is how often it renews.
	RetryPeriod time.Duration
	// Metrics receives the membership's measurements. Nil records
	// nothing.
	Metrics Metrics
}

// complete fills defaults and checks the configuration.
func (c Config) complete() (Config, error) {
	var errs []error
	if c.Client == nil || c.Namespace == "" || c.Group == "" {
		errs = append(errs, errors.New("Config needs a Client, a Namespace and a Group"))
	}
	// The group starts every member's Lease name and labels it.
	for _, msg := range validation.IsValidLabelValue(c.Group) {
		errs = append(errs, fmt.Errorf("group %q: %s", c.Group, msg))
	}
	for _, msg := range validation.IsDNS1123Subdomain(LeaseName(c.Group, "")) {
		errs = append(errs, fmt.Errorf("group %q does not start a valid Lease name: %s", c.Group, msg))
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = host + "_" + string(uuid.NewUUID())
	}
	c.LeaseDuration = orDefault(c.LeaseDuration, leader.DefaultLeaseDuration)
	c.RenewDeadline = orDefault(c.RenewDeadline, leader.DefaultRenewDeadline)
	c.RetryPeriod = orDefault(c.RetryPeriod, leader.DefaultRetryPeriod)
	if err := CheckTimings(c.LeaseDuration, c.RenewDeadline, c.RetryPeriod); err != nil {
		errs = append(errs, err)
	}
	if c.Metrics == nil {
		c.Metrics = noopMetrics{}
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("shard: %w", err)
	}
	return c, nil
}

// CheckTimings returns an error, saying what to change, unless New
// accepts these (non-zero) durations: the rules Config states.
func CheckTimings(leaseDuration, renewDeadline, retryPeriod time.Duration) error {
	if leaseDuration <= renewDeadline+retryPeriod || renewDeadline <= retryPeriod || retryPeriod <= 0 {
		return fmt.Errorf("need lease duration (%s) > renew deadline (%s) + retry period (%s), and renew deadline > retry period > 0",
			leaseDuration, renewDeadline, retryPeriod)
	}
	if t := lease.RequestTimeout(leaseDuration, renewDeadline, retryPeriod); t < lease.MinRequestTimeout {
		return fmt.Errorf("a write of the Lease may take only %s, less than %s, with lease duration %s, renew deadline %s and retry period %s: lengthen the renew deadline relative to the retry period, or the lease duration relative to the renew deadline (the write timeout is the lesser of lease duration - renew deadline and half of renew deadline - retry period)",
			t, lease.MinRequestTimeout, leaseDuration, renewDeadline, retryPeriod)
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// MaxMembers is the largest group supported. Every member renews its
// Lease, with the member list it publishes, every RetryPeriod, and every
// member watches every Lease: the watch traffic grows with the cube of
// the group's size. At 32 members with the default timings it is about
// 0.7 MB/s (Leases of 1.3 KB, 32 writes sent to 32 watches every 2
// seconds); at 100 it would be 16 MB/s. A replica that finds, before it
// has claimed anything, more than MaxMembers live members (itself
// included) leaves again, and its Run returns an error wrapping
// ErrGroupFull; the members that joined before it stay.
const MaxMembers = 32

// ErrGroupFull is wrapped by the error Run returns when the replica did
// not join because the group has MaxMembers members already.
var ErrGroupFull = errors.New("shard: the group has as many members as it may have")

// LeaseName returns the name of the Lease of the member identity in group:
// the group, a dash and a hash of the identity, so that any identity makes
// a valid name.
func LeaseName(group, identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return group + "-" + hex.EncodeToString(sum[:6])
}

// Membership is one replica's seat in a group: Run keeps its Lease and
// decides which keys the replica's Gates own. Create it with New; it runs
// once.
type Membership struct {
	cfg   Config
	lease string
	// now reads the membership's monotonic clock: every duration the
	// protocol judges is local to this process and immune to steps of the
	// wall clock.
	now func() time.Duration
	// wall reads the time of day, which only the Lease's RenewTime and
	// AcquireTime show.
	wall func() time.Time
	view atomic.Pointer[view]

	gatesMu sync.Mutex
	gates   []gate

	// applyMu orders the views given to the gates.
	applyMu sync.Mutex
	// cachesMu guards the sharded caches and the gains they still owe.
	cachesMu sync.Mutex
	caches   []shardCache
	// base is the last view the core set, without pending gains.
	base    *view
	pending []gain
	epoch   uint64
	done    map[shardCache]uint64
	// cachesHeld: the caches held every key of a view once.
	cachesHeld atomic.Bool

	started atomic.Bool
	kick    chan struct{}
	write   chan struct{}

	mu   sync.Mutex // guards core
	core *core
}

// gate is what a Membership needs of a Gate.
type gate interface {
	// restrict cancels the claims v does not allow and returns channels
	// that are closed when they are released.
	restrict(v *view) (pending []<-chan struct{})
	// changed wakes the gate to enqueue the keys it gained.
	changed()
	// holds reports whether a claim holds the key with hash h.
	holds(h uint64) bool
}

// New returns the membership of one replica, checking cfg. It starts
// nothing.
func New(cfg Config) (*Membership, error) {
	cfg, err := cfg.complete()
	if err != nil {
		return nil, err
	}
	origin := time.Now()
	return &Membership{
		cfg:   cfg,
		lease: LeaseName(cfg.Group, cfg.Identity),
		now:   func() time.Duration { return time.Since(origin) },
		wall:  time.Now,
		kick:  make(chan struct{}, 1),
		write: make(chan struct{}, 1),
		core:  newCore(cfg, string(uuid.NewUUID())),
	}, nil
}

// Name returns the name of this replica's Lease, which is how the members
// know each other.
func (m *Membership) Name() string { return m.lease }

// HasSynced reports whether this replica has published its first member
// list and seen it confirmed, and its sharded caches (see Informer) have
// held the keys of a view since, so that it owns keys.
func (m *Membership) HasSynced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.core.synced && m.cachesHeld.Load()
}

// Members returns the Lease names of the members this replica considers
// live, itself included, sorted. Once Run has returned it keeps returning
// the last members it saw, while its Gates own no key.
func (m *Membership) Members() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.core.members)
}

// shardCache is what a Membership needs of a sharded cache.
type shardCache interface {
	// refresh asks for a consistent relist begun after this call, which
	// the cache reports to the membership once it holds it; it must not
	// report from within the call.
	refresh(epoch uint64)
	// keep drops the objects of the keys v does not want and no claim
	// holds.
	keep(v *view)
}

// registerCache adds a sharded cache; caches are registered when they are
// created.
func (m *Membership) registerCache(c shardCache) {
	m.cachesMu.Lock()
	defer m.cachesMu.Unlock()
	m.caches = append(m.caches, c)
	if m.done == nil {
		m.done = map[shardCache]uint64{}
	}
	m.done[c] = m.epoch
}

// register adds a gate; gates are registered when they are created.
func (m *Membership) register(g gate) {
	m.gatesMu.Lock()
	defer m.gatesMu.Unlock()
	m.gates = append(m.gates, g)
}

// apply makes v the view the gates check, cancels the claims it does not
// allow, and returns what those claims close when they are released. If
// v may own keys the view before did not, and the replica has sharded
// caches, those keys wait until every cache has been refreshed. The
// objects of keys v does not want stay in the caches: dropUnwanted drops
// them once those claims are released.
func (m *Membership) apply(v *view) (pending []<-chan struct{}) {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	m.cachesMu.Lock()
	caches := slices.Clone(m.caches)
	var epoch uint64
	if len(caches) > 0 && mayGain(m.base, v) {
		m.epoch++
		epoch = m.epoch
		m.pending = append(m.pending, gain{from: m.base.listsOnly(), to: v.listsOnly(), epoch: epoch})
	}
	m.base = v
	v = m.withPending(v)
	m.view.Store(v)
	m.noteHeld()
	m.cachesMu.Unlock()
	if epoch > 0 {
		for _, c := range caches {
			c.refresh(epoch)
		}
	}
	return m.restrict(v)
}

// extend replaces the view with v, which owns the same keys for longer.
func (m *Membership) extend(v *view) {
	m.cachesMu.Lock()
	defer m.cachesMu.Unlock()
	m.base = v
	m.view.Store(m.withPending(v))
	m.noteHeld()
}

// withPending returns v with the gains still pending; m.cachesMu is held.
func (m *Membership) withPending(v *view) *view {
	if v == nil || len(m.pending) == 0 {
		return v
	}
	c := *v
	c.pending = slices.Clone(m.pending)
	return &c
}

// refreshed records that cache c holds a relist begun after the gain of
// epoch; once every cache does, the keys of the gains up to it are owned.
func (m *Membership) refreshed(c shardCache, epoch uint64) {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	m.cachesMu.Lock()
	m.done[c] = max(m.done[c], epoch)
	all := epoch
	for _, other := range m.caches {
		all = min(all, m.done[other])
	}
	n := len(m.pending)
	m.pending = slices.DeleteFunc(m.pending, func(g gain) bool { return g.epoch <= all })
	if len(m.pending) == n {
		m.cachesMu.Unlock()
		return
	}
	v := m.withPending(m.base)
	m.view.Store(v)
	m.noteHeld()
	m.cachesMu.Unlock()
	m.restrict(v) // takes nothing away: it records v for the scans
}

// noteHeld records that the sharded caches hold the keys of a view with
// no gain pending; m.cachesMu is held.
func (m *Membership) noteHeld() {
	if m.base != nil && len(m.pending) == 0 {
		m.cachesHeld.Store(true)
	}
}

// restrict gives v to the gates, which cancel the claims it does not
// allow and enqueue the keys it gave; it returns what the cancelled
// claims close when they are released.
func (m *Membership) restrict(v *view) (pending []<-chan struct{}) {
	m.gatesMu.Lock()
	gates := slices.Clone(m.gates)
	m.gatesMu.Unlock()
	for _, g := range gates {
		pending = append(pending, g.restrict(v)...)
		g.changed()
	}
	return pending
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// withCore runs fn on the core under the membership's lock.
func (m *Membership) withCore(fn func(c *core)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fn(m.core)
}

// Run creates this replica's Lease (or takes it over from a former
// process of the same identity), watches the group's Leases and keeps the
// ownership of keys up to date until ctx is cancelled; see the package
// documentation for the protocol. On cancellation it revokes every claim,
// waits until the claims are released, publishes that it left, deletes
// its Lease so that the others take its keys at once, and returns nil
// (a cancellation before it joined: it waits for a create in flight,
// deletes the Lease if a create of this process landed, or, if none is
// there and a create it abandoned may still be applied, creates the Lease
// marked as left so that such a create fails (the others delete that
// Lease as a departed member's, two LeaseDurations on), and returns an
// error saying it stopped before joining). It
// returns an error wrapping leader.ErrLeaseLost if no renewal of the Lease
// came back through the informer within RenewDeadline, or the Lease was
// deleted or renewed by another process, after revoking every claim; the
// process should then exit and start over. It returns an error wrapping
// ErrGroupFull, after leaving, if the group had MaxMembers members when
// this replica joined.
func (m *Membership) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("shard: membership was already started")
	}
	logger := klog.FromContext(ctx).WithValues("group", m.cfg.Group, "member", m.lease)
	ctx = klog.NewContext(ctx, logger)

	factory := informers.NewSharedInformerFactoryWithOptions(m.cfg.Client, 0, informers.WithNamespace(m.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelGroup + "=" + m.cfg.Group }))
	inf := factory.Coordination().V1().Leases().Informer()
	lost := make(chan error, 1)
	report := func(err error) {
		if err != nil {
			select {
			case lost <- err:
			default:
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { report(m.observe(obj)) },
		UpdateFunc: func(_, obj any) { report(m.observe(obj)) },
		DeleteFunc: func(obj any) { report(m.forget(obj)) },
	}); err != nil {
		return fmt.Errorf("shard: %w", err)
	}

	stopInformers := make(chan struct{})
	defer factory.Shutdown()
	defer close(stopInformers)
	// Requests go on after ctx is cancelled, as leaving needs them; they
	// end with Run.
	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	var requests sync.WaitGroup
	defer requests.Wait()
	defer cancelRequests()
	out := &runEffects{m: m, ctx: reqCtx, requests: &requests, answers: make(chan answer),
		start: func() { factory.Start(stopInformers) }}
	d := newDriver(m, out, logger)
	d.start()

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	stop := ctx.Done()
	for {
		if done, err := d.done(); done {
			return err
		}
		timer.Stop()
		if w := d.wake(); w > 0 {
			resetTimer(timer, max(0, w-m.now()))
		}
		select {
		case <-stop:
			stop = nil
			d.stop()
		case err := <-lost:
			d.lose(err)
		case a := <-out.answers:
			d.answered(a.r, a.lease, a.err)
		case <-m.kick:
		case <-timer.C:
		}
		d.synced = inf.HasSynced()
		d.turn()
	}
}

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	t.Reset(d)
}

// answer is the API server's answer to a request.
type answer struct {
	r     request
	lease *coordinationv1.Lease
	err   error
}

// runEffects carries out a driver's requests with the membership's client,
// each in its own goroutine, and hands the answers to Run's loop.
type runEffects struct {
	m        *Membership
	ctx      context.Context
	requests *sync.WaitGroup
	answers  chan answer
	start    func()
}

func (e *runEffects) send(r request) {
	e.requests.Go(func() {
		ctx, cancel := r.context(e.ctx)
		l, err := r.do(ctx, e.m)
		cancel()
		select {
		case e.answers <- answer{r: r, lease: l, err: err}:
		case <-e.ctx.Done():
		}
	})
}

func (e *runEffects) startInformer() { e.start() }

// mayPass reports whether a request that failed with err may succeed if
// sent again: not when it was refused for its content, its permissions or
// a missing namespace.
func mayPass(err error) bool {
	return !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) && !apierrors.IsInvalid(err) &&
		!apierrors.IsBadRequest(err) && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err)
}

// retryDelete reports whether the deletion of a stale Lease that failed
// with err should be asked again: not when the Lease is gone or changed.
func retryDelete(err error) bool {
	return err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err)
}

// observe records a Lease of the group as seen by the informer.
func (m *Membership) observe(obj any) error {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return nil
	}
	m.mu.Lock()
	err := m.core.observe(l, m.now())
	m.mu.Unlock()
	signal(m.kick)
	return err
}

// forget records the deletion of a Lease.
func (m *Membership) forget(obj any) error {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l == nil {
		return nil
	}
	m.mu.Lock()
	err := m.core.forget(l.Name)
	m.mu.Unlock()
	signal(m.kick)
	return err
}
