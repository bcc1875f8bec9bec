package shard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/queue/leader"
)

const (
	// LabelGroup labels every member Lease with its group's name.
	LabelGroup = "shard.ctrlkit.io/group"
	// AnnotationView holds the member list a replica works under, as
	// "<generation> <name>,<name>,...".
	AnnotationView = "shard.ctrlkit.io/view"
)

// ErrLeaseLost is wrapped by the error Run returns when this replica could
// not renew its Lease for RenewDeadline, or found it deleted.
var ErrLeaseLost = errors.New("shard: lost the membership Lease")

// errMoved is the cause of a claim cancelled because its key moved.
var errMoved = errors.New("shard: the key moved to another replica")

// Config describes a replica's membership. Zero durations select package
// leader's defaults, and the same rules bind them.
type Config struct {
	// Client reads and writes the Leases.
	Client kubernetes.Interface
	// Namespace holds the group's Leases.
	Namespace string
	// Group names the replicas that share the keys: the Leases carry it in
	// the label LabelGroup, so it must be a valid label value.
	Group string
	// Identity of this replica, the holder of its Lease. Default: the host
	// name and a random suffix, unique per process.
	Identity string
	// LeaseDuration is how long the others wait after they last saw this
	// replica's Lease renewed before they take its keys.
	LeaseDuration time.Duration
	// RenewDeadline is how long this replica keeps trying to renew before
	// it stops reconciling.
	RenewDeadline time.Duration
	// RetryPeriod is how often it renews.
	RetryPeriod time.Duration
	// Metrics receives the membership's measurements. Default none.
	Metrics Metrics
}

// complete fills defaults and checks the configuration.
func (c Config) complete() (Config, error) {
	var errs []error
	if c.Client == nil || c.Namespace == "" || c.Group == "" {
		errs = append(errs, errors.New("Config needs a Client, a Namespace and a Group"))
	}
	for _, msg := range validation.IsValidLabelValue(c.Group) {
		errs = append(errs, fmt.Errorf("group %q: %s", c.Group, msg))
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = host + "_" + string(uuid.NewUUID())
	}
	c.LeaseDuration = orDefault(c.LeaseDuration, leader.DefaultLeaseDuration)
	c.RenewDeadline = orDefault(c.RenewDeadline, leader.DefaultRenewDeadline)
	c.RetryPeriod = orDefault(c.RetryPeriod, leader.DefaultRetryPeriod)
	if c.LeaseDuration <= c.RenewDeadline+c.RetryPeriod || c.RenewDeadline <= c.RetryPeriod || c.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("need lease duration (%s) > renew deadline (%s) + retry period (%s), and renew deadline > retry period > 0",
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod))
	}
	if c.Metrics == nil {
		c.Metrics = NoopMetrics{}
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("shard: %w", err)
	}
	return c, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

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
	view  atomic.Pointer[view]

	gatesMu sync.Mutex
	gates   []gate

	started    atomic.Bool
	synced     atomic.Bool
	lastRenew  atomic.Int64 // send time (UnixNano) of the last successful renewal
	kick       chan struct{}
	publishNow chan struct{}

	mu       sync.Mutex
	observed map[string]*observedLease
	desired  published // what the writer puts in the Lease
	members  []string  // the live members of the last step, for Members
}

// gate is what a Membership needs of a Gate.
type gate interface {
	// restrict cancels the claims v does not allow and returns a function
	// that waits until they are released.
	restrict(v *view) (wait func())
	// changed wakes the gate to enqueue the keys it gained.
	changed()
}

// published is a member list with its generation.
type published struct {
	gen     uint64
	members []string
}

func (p published) String() string {
	return strconv.FormatUint(p.gen, 10) + " " + strings.Join(p.members, ",")
}

func parsePublished(s string) (published, bool) {
	genStr, list, ok := strings.Cut(s, " ")
	gen, err := strconv.ParseUint(genStr, 10, 64)
	if !ok || err != nil {
		return published{}, false
	}
	p := published{gen: gen}
	if list != "" {
		p.members = strings.Split(list, ",")
	}
	return p, true
}

// observedLease is what this replica knows of a member's Lease.
type observedLease struct {
	uid             types.UID
	resourceVersion string
	published       published
	renewTime       time.Time // as written by the member, on its clock
	// observedAt is when this replica saw the Lease change (its clock).
	observedAt time.Time
}

// New returns the membership of one replica, checking cfg. It starts
// nothing.
func New(cfg Config) (*Membership, error) {
	cfg, err := cfg.complete()
	if err != nil {
		return nil, err
	}
	return &Membership{
		cfg:        cfg,
		lease:      LeaseName(cfg.Group, cfg.Identity),
		kick:       make(chan struct{}, 1),
		publishNow: make(chan struct{}, 1),
		observed:   map[string]*observedLease{},
	}, nil
}

// Name returns the name of this replica's Lease, which is how the members
// know each other.
func (m *Membership) Name() string { return m.lease }

// HasSynced reports whether this replica has published its first member
// list and seen it confirmed, so that it owns keys.
func (m *Membership) HasSynced() bool { return m.synced.Load() }

// Members returns the Lease names of the members this replica considers
// live, itself included, sorted.
func (m *Membership) Members() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.members)
}

// register adds a gate; gates are registered when they are created.
func (m *Membership) register(g gate) {
	m.gatesMu.Lock()
	defer m.gatesMu.Unlock()
	m.gates = append(m.gates, g)
}

// apply makes v the view the gates check, cancels the claims it does not
// allow, and returns a function that waits until they are released.
func (m *Membership) apply(v *view) (wait func()) {
	m.view.Store(v)
	m.gatesMu.Lock()
	gates := slices.Clone(m.gates)
	m.gatesMu.Unlock()
	waits := make([]func(), 0, len(gates))
	for _, g := range gates {
		waits = append(waits, g.restrict(v))
		g.changed()
	}
	return func() {
		for _, w := range waits {
			w()
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Run creates this replica's Lease, watches the group's Leases and keeps
// the ownership of keys up to date until ctx is cancelled; see the package
// documentation for the protocol. On cancellation it revokes every claim,
// waits until the claims are released, deletes its Lease so that the
// others take its keys at once, and returns nil. It returns an error
// wrapping ErrLeaseLost if the Lease could not be renewed for RenewDeadline
// or was deleted, after revoking every claim; the process should then exit
// and start over.
func (m *Membership) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("shard: membership was already started")
	}
	logger := klog.FromContext(ctx).WithValues("group", m.cfg.Group, "member", m.lease)
	ctx = klog.NewContext(ctx, logger)
	leases := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)

	factory := informers.NewSharedInformerFactoryWithOptions(m.cfg.Client, 0, informers.WithNamespace(m.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelGroup + "=" + m.cfg.Group }))
	inf := factory.Coordination().V1().Leases().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.observe(obj) },
		UpdateFunc: func(_, obj any) { m.observe(obj) },
		DeleteFunc: func(obj any) { m.forget(obj) },
	}); err != nil {
		return fmt.Errorf("shard: %w", err)
	}

	now := time.Now()
	own, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.lease, Namespace: m.cfg.Namespace,
			Labels:      map[string]string{LabelGroup: m.cfg.Group},
			Annotations: map[string]string{AnnotationView: published{}.String()},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(m.cfg.Identity),
			LeaseDurationSeconds: ptr.To(int32((m.cfg.LeaseDuration + time.Second - 1) / time.Second)),
			AcquireTime:          &metav1.MicroTime{Time: now},
			RenewTime:            &metav1.MicroTime{Time: now},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("shard: creating Lease %s/%s: %w", m.cfg.Namespace, m.lease, err)
	}
	m.lastRenew.Store(now.UnixNano())
	logger.Info("Joined the group")

	stopInformers := make(chan struct{})
	factory.Start(stopInformers)
	defer factory.Shutdown()
	defer close(stopInformers)

	var background sync.WaitGroup
	defer background.Wait()
	writerCtx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWriter()
	lost := make(chan error, 1)
	background.Go(func() { m.renew(writerCtx, own, lost) })

	c := coordinator{m: m, background: &background, departed: map[string]time.Time{}, deleting: map[string]bool{}}
	tick := time.NewTicker(m.cfg.RetryPeriod / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			// Keep renewing until every claim is released.
			m.apply(nil)()
			stopWriter()
			m.deleteOwn(ctx)
			logger.Info("Left the group")
			return nil
		case err := <-lost:
			m.apply(nil)()
			logger.Error(err, "Lost the membership Lease; every claim is revoked")
			return err
		case <-m.kick:
		case <-tick.C:
		}
		if since := time.Since(time.Unix(0, m.lastRenew.Load())); since > m.cfg.RenewDeadline {
			m.apply(nil)()
			err := fmt.Errorf("%w: no renewal for %s", ErrLeaseLost, since.Round(time.Millisecond))
			logger.Error(err, "Every claim is revoked")
			return err
		}
		if inf.HasSynced() {
			c.step(ctx)
		}
	}
}

// observe records a Lease of the group as seen by the informer.
func (m *Membership) observe(obj any) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	p, _ := parsePublished(l.Annotations[AnnotationView])
	var renew time.Time
	if l.Spec.RenewTime != nil {
		renew = l.Spec.RenewTime.Time
	}
	m.mu.Lock()
	old := m.observed[l.Name]
	// A relist delivers unchanged Leases again: only a new version (or
	// renewal) counts as a sign of life.
	if old == nil || old.resourceVersion != l.ResourceVersion || !old.renewTime.Equal(renew) {
		m.observed[l.Name] = &observedLease{uid: l.UID, resourceVersion: l.ResourceVersion, published: p, renewTime: renew, observedAt: time.Now()}
	}
	m.mu.Unlock()
	signal(m.kick)
}

// forget drops a deleted Lease.
func (m *Membership) forget(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	m.mu.Lock()
	delete(m.observed, l.Name)
	m.mu.Unlock()
	signal(m.kick)
}

// renew writes this replica's Lease every RetryPeriod, and at once when
// the list to publish changes. A renewal counts only if it succeeded
// within LeaseDuration - RenewDeadline of being sent: the others, which
// give up on this replica LeaseDuration after they saw a renewal, then
// either see it or see that it came too late to keep this replica alive.
func (m *Membership) renew(ctx context.Context, lease *coordinationv1.Lease, lost chan<- error) {
	logger := klog.FromContext(ctx)
	leases := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)
	limit := m.cfg.LeaseDuration - m.cfg.RenewDeadline
	tick := time.NewTicker(m.cfg.RetryPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-m.publishNow:
		}
		m.mu.Lock()
		p := m.desired
		m.mu.Unlock()
		sent := time.Now()
		next := lease.DeepCopy()
		next.Spec.RenewTime = &metav1.MicroTime{Time: sent}
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		next.Annotations[AnnotationView] = p.String()
		reqCtx, cancel := context.WithTimeout(ctx, limit)
		updated, err := leases.Update(reqCtx, next, metav1.UpdateOptions{})
		cancel()
		switch {
		case err == nil && time.Since(sent) < limit:
			lease = updated
			m.lastRenew.Store(sent.UnixNano())
		case err == nil:
			lease = updated
			logger.V(2).Info("A renewal of the membership Lease came too late to count", "after", time.Since(sent))
		case apierrors.IsNotFound(err):
			lost <- fmt.Errorf("%w: Lease %s/%s was deleted", ErrLeaseLost, m.cfg.Namespace, m.lease)
			return
		case apierrors.IsConflict(err):
			reqCtx, cancel := context.WithTimeout(ctx, m.cfg.RetryPeriod)
			got, getErr := leases.Get(reqCtx, m.lease, metav1.GetOptions{})
			cancel()
			if getErr == nil {
				lease = got
			}
		case ctx.Err() == nil:
			logger.V(2).Info("Could not renew the membership Lease", "err", err.Error())
		}
	}
}

// deleteOwn deletes this replica's Lease after a normal stop.
func (m *Membership) deleteOwn(ctx context.Context) {
	delCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.RenewDeadline)
	defer cancel()
	if err := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace).Delete(delCtx, m.lease, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Could not delete the membership Lease; it expires on its own")
	}
}

// coordinator is the state of Run's loop.
type coordinator struct {
	m *Membership
	// target is the member list this replica works under; targetGen its
	// generation, releasedGen the last generation whose released keys
	// have no claim left.
	target      []string
	targetGen   uint64
	releasedGen atomic.Uint64
	fingerprint string
	background  *sync.WaitGroup
	// departed holds members that left and when they were last seen,
	// until a confirmed list without them measures the takeover.
	departed map[string]time.Time
	deleting map[string]bool
}

// step recomputes the live members, the list to publish and the view.
func (c *coordinator) step(ctx context.Context) {
	m := c.m
	m.mu.Lock()
	observed := make(map[string]observedLease, len(m.observed))
	for name, o := range m.observed {
		observed[name] = *o
	}
	m.mu.Unlock()
	own, ok := observed[m.lease]
	if !ok {
		return // not seen our own Lease yet
	}
	// A member is gone when its Lease has not changed for LeaseDuration,
	// measured up to the send time of this replica's latest renewal that
	// the informer delivered back: a watch that fell behind cannot make a
	// live member look gone.
	echo := own.renewTime
	live := []string{m.lease}
	claims := map[string][]string{}
	for name, o := range observed {
		if name == m.lease {
			continue
		}
		if echo.Sub(o.observedAt) > m.cfg.LeaseDuration {
			if _, ok := c.departed[name]; !ok && slices.Contains(c.target, name) {
				c.departed[name] = o.observedAt
			}
			if time.Since(o.observedAt) > 2*m.cfg.LeaseDuration {
				c.deleteStale(ctx, name, o)
			}
			continue
		}
		live = append(live, name)
		claims[name] = o.published.members
	}
	slices.Sort(live)
	for _, name := range c.target {
		if !slices.Contains(live, name) {
			if _, ok := c.departed[name]; !ok {
				c.departed[name] = time.Now() // deleted: it left just now
			}
		}
	}
	m.mu.Lock()
	m.members = live
	m.mu.Unlock()
	m.cfg.Metrics.SetMembers(m.cfg.Group, len(live))

	var confirmed []string
	if own.published.gen > 0 {
		confirmed = own.published.members
	}
	if !slices.Equal(live, c.target) {
		c.target = live
		c.targetGen++
		klog.FromContext(ctx).Info("Members changed", "members", live, "generation", c.targetGen)
		gen := c.targetGen
		wait := c.applyView(newView(m.lease, live, confirmed, claims))
		c.background.Go(func() {
			wait()
			for {
				old := c.releasedGen.Load()
				if old >= gen || c.releasedGen.CompareAndSwap(old, gen) {
					break
				}
			}
			signal(m.kick)
		})
	} else {
		c.applyView(newView(m.lease, live, confirmed, claims))
	}
	if c.releasedGen.Load() == c.targetGen && c.targetGen > 0 {
		m.mu.Lock()
		if m.desired.gen != c.targetGen {
			m.desired = published{gen: c.targetGen, members: slices.Clone(c.target)}
			signal(m.publishNow)
			if c.targetGen > 1 {
				m.cfg.Metrics.IncHandoffs(m.cfg.Group)
			}
		}
		m.mu.Unlock()
	}
	if own.published.gen > 0 && own.published.gen == c.targetGen {
		if !m.synced.Swap(true) {
			klog.FromContext(ctx).Info("Owns its keys", "members", confirmed)
		}
		for name, seen := range c.departed {
			if !slices.Contains(confirmed, name) {
				m.cfg.Metrics.ObserveTakeover(m.cfg.Group, time.Since(seen))
				klog.FromContext(ctx).Info("Took over the keys of a member that left", "left", name, "after", time.Since(seen).Round(time.Millisecond))
			}
			delete(c.departed, name)
		}
	}
}

// applyView applies v unless it equals the current view.
func (c *coordinator) applyView(v *view) (wait func()) {
	fp := "<none>"
	if v != nil {
		fp = v.fingerprint
	}
	if fp == c.fingerprint {
		return func() {}
	}
	c.fingerprint = fp
	return c.m.apply(v)
}

// deleteStale deletes the Lease of a member gone for two LeaseDurations,
// only in the version in which it was seen gone.
func (c *coordinator) deleteStale(ctx context.Context, name string, o observedLease) {
	if c.deleting[o.resourceVersion] {
		return
	}
	c.deleting[o.resourceVersion] = true
	m := c.m
	c.background.Go(func() {
		delCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.RetryPeriod)
		defer cancel()
		err := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace).Delete(delCtx, name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &o.uid, ResourceVersion: &o.resourceVersion},
		})
		if err == nil {
			klog.FromContext(ctx).Info("Deleted the Lease of a member that left", "left", name)
		}
	})
}
