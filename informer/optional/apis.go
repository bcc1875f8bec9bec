package optional

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// APIs reads CustomResourceDefinitions. apigen adds the rule of this
// marker to the ClusterRole of an operator whose packages import this one:
//
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch

// DefaultDiscoveryPeriod is how often APIs asks discovery about the group
// versions of the resources declared with FromDiscovery, when
// WithDiscoveryPeriod is not given.
const DefaultDiscoveryPeriod = time.Minute

// MinDiscoveryPeriod is the shortest discovery period WithDiscoveryPeriod
// accepts: discovery is a request per group version each period.
const MinDiscoveryPeriod = 5 * time.Second

// DiscoveryTimeout bounds each discovery request, whatever the discovery
// client's own timeout: a request that hangs (an aggregated API whose
// backend accepts and never answers) fails after it, and its resources
// are taken as not served until discovery answers.
const DiscoveryTimeout = 30 * time.Second

// FirstDiscoveryRetry is how soon discovery is asked again about a group
// version after a failed request (an error other than NotFound, a 503
// included): the wait doubles at each failure in a row, up to the
// discovery period, and is reset by an answer.
const FirstDiscoveryRetry = time.Second

// MaxHoldOffPeriods bounds the hold-off of a group version whose
// resources' watches answered 503 (ServiceUnavailable) while discovery
// served it: discovery's next 1, 2, 4, ... and at most MaxHoldOffPeriods
// answers that serve it are not believed before its watches start again.
const MaxHoldOffPeriods = 16

// ErrNotServed is the cause of the context of a reconcile cancelled
// because the resource its key needs is no longer served.
var ErrNotServed = errors.New("resource no longer served")

// State is what an Informer does.
type State string

// The states of an Informer.
const (
	// Waiting: its resource has not been served since the APIs started
	// (or the APIs have not synced yet); no informer runs.
	Waiting State = "waiting"
	// Running: its resource is served and an informer watches it.
	Running State = "running"
	// Stopped: its informer was stopped, because its resource was served
	// and is no longer (a new one starts when the resource is served
	// again), or because its APIs shut down.
	Stopped State = "stopped"
)

// States lists every State.
var States = []State{Waiting, Running, Stopped}

// Metrics records what the Informers of an APIs do. *metrics.Recorder
// implements it.
type Metrics interface {
	// SetAPIWatchState records that the Informer of resource (as
	// "resource.group/version") on the APIs named cluster is in state.
	SetAPIWatchState(cluster, resource string, state State)
	// IncAPIWatchStops counts an Informer stopped because its resource
	// was no longer served (or its CRD was deleted and created again).
	IncAPIWatchStops(cluster, resource string)
	// DeleteAPIWatchState removes what was recorded of the Informer of
	// resource on the APIs named cluster (its state and its count of
	// stops): its APIs shut down (the process stops, or a fleet's member
	// left).
	DeleteAPIWatchState(cluster, resource string)
}

// Option configures NewAPIs (WithDiscoveryPeriod, WithMetrics, WithName)
// or NewInformer (FromDiscovery). A nil Option is ignored; an Option given
// to the other function is refused there (see APIs.Err and
// Informer.Err).
type Option func(*config)

type config struct {
	period        time.Duration
	retry         time.Duration
	metrics       Metrics
	name          string
	fromDiscovery bool
	// apisOnly and informerOnly name options given where they do not
	// apply.
	apisOnly, informerOnly []string
}

// WithDiscoveryPeriod sets how often APIs asks discovery about the
// resources declared with FromDiscovery (default DefaultDiscoveryPeriod,
// at least MinDiscoveryPeriod). It applies to NewAPIs.
func WithDiscoveryPeriod(d time.Duration) Option {
	return func(c *config) { c.period = d; c.apisOnly = append(c.apisOnly, "WithDiscoveryPeriod") }
}

// WithMetrics makes APIs record the state of its Informers in m. It
// applies to NewAPIs.
func WithMetrics(m Metrics) Option {
	return func(c *config) { c.metrics = m; c.apisOnly = append(c.apisOnly, "WithMetrics") }
}

// WithName names the APIs (in logs, and as the cluster of its metrics):
// the member cluster's name in a fleet. It applies to NewAPIs.
func WithName(name string) Option {
	return func(c *config) { c.name = name; c.apisOnly = append(c.apisOnly, "WithName") }
}

// FromDiscovery declares that no CRD defines the resource (an aggregated
// API, or one built into the API server): whether it is served is asked
// of discovery every discovery period (a resource discovery serves
// without the verbs list and watch, such as metrics.k8s.io's pods, cannot
// be watched: it is taken as not served, its Informer waits, and that is
// logged once), by a goroutine of its group
// version's own, so that a discovery request that hangs (an aggregated
// API whose backend does not answer; DiscoveryTimeout bounds it) holds
// back only the answers about the resources of its group version, never
// those of another group version nor those followed by their CRDs. A group version whose discovery fails before it ever
// answered is taken as not served (its Informer waits, and is synced:
// it holds nothing back); one whose discovery fails later keeps its last
// answer, unless discovery reports it unavailable (a 503, or marked
// stale): then it is not served, its watches stop until discovery serves
// it again. A failed request is asked again sooner than the period (see
// FirstDiscoveryRetry). A list or watch of
// the resource that answers 503 stops the watches of its group version
// too, and holds it off: discovery's next answers serving it are not
// believed for 1, 2, 4, ... (at most MaxHoldOffPeriods) periods, so that
// a backend that stays down is not listed, nor its failure logged, in a
// loop. It applies to NewInformer.
func FromDiscovery() Option {
	return func(c *config) { c.fromDiscovery = true; c.informerOnly = append(c.informerOnly, "FromDiscovery") }
}

func newConfig(opts []Option) config {
	c := config{period: DefaultDiscoveryPeriod, retry: FirstDiscoveryRetry}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// follower is an Informer of some type, as APIs drives it.
type follower interface {
	resource() schema.GroupVersionResource
	byDiscovery() bool
	// follow starts or stops the Informer so that it runs when served;
	// uid is the UID of the resource's CRD ("" when followed by
	// discovery): an informer started for another UID is restarted.
	follow(ctx context.Context, served bool, uid types.UID)
	// stop stops the Informer's informer and waits for it.
	stop()
	// running reports whether an informer runs.
	running() bool
	syncedNow() bool
	// decided records that the APIs decided whether the resource is
	// served; hasSynced reports whether they have and the running
	// informer, if any, has synced.
	decided()
	hasSynced() bool
	objectType() reflect.Type
}

// APIs follows which resources one cluster serves and runs the Informers
// made on it (see the package documentation). It is an informer.Factory:
// Start starts it, WaitForCacheSync waits until it knows what is served
// and the informers of the served resources have synced, and Shutdown
// (after stopCh is closed) stops every informer and waits for them.
// Informers must be made (NewInformer) before Start.
type APIs struct {
	cfg  config
	err  error
	crds cache.SharedIndexInformer
	disc discovery.DiscoveryInterface

	// kick wakes the loop after a CRD event.
	kick chan struct{}
	// synced is set once the loop has decided for every Informer after
	// the CRD informer synced and discovery was asked (whatever it
	// answered) about every group version of them.
	synced atomic.Bool
	wg     sync.WaitGroup

	discMu sync.Mutex
	// discovered holds discovery's last answer by group version: the
	// resources it serves. guarded by discMu.
	discovered map[schema.GroupVersion]map[string]bool
	// asked holds the group versions discovery was asked about, whatever
	// it answered. guarded by discMu.
	asked map[schema.GroupVersion]bool
	// holds holds, by group version, the hold-off after its watches
	// answered 503. guarded by discMu.
	holds map[schema.GroupVersion]*holdOff

	mu        sync.Mutex
	started   bool       // guarded by mu
	followers []follower // guarded by mu; fixed once started
}

// NewAPIs returns the APIs of the cluster of crds and disc: it follows the
// cluster's CustomResourceDefinitions with crds and, for the resources
// declared with FromDiscovery, asks disc every discovery period. disc may
// be nil when no resource uses FromDiscovery. disc must ask the API
// server each time: a cached discovery client (memory.NewMemCacheClient)
// keeps its first answers unless it is invalidated, and the APIs would
// not see a group version come or go. Options that do not apply
// are refused: Err reports it, and Start starts nothing.
func NewAPIs(crds apiextensionsclientset.Interface, disc discovery.DiscoveryInterface, opts ...Option) *APIs {
	cfg := newConfig(opts)
	a := &APIs{cfg: cfg, disc: disc, kick: make(chan struct{}, 1), discovered: map[schema.GroupVersion]map[string]bool{}, asked: map[schema.GroupVersion]bool{}, holds: map[schema.GroupVersion]*holdOff{}}
	switch {
	case crds == nil:
		a.err = errors.New("optional: NewAPIs needs a CRD clientset")
	case len(cfg.informerOnly) > 0:
		a.err = fmt.Errorf("optional: %s applies to NewInformer, not NewAPIs", cfg.informerOnly[0])
	case cfg.period < MinDiscoveryPeriod:
		a.err = fmt.Errorf("optional: discovery period %s is shorter than %s", cfg.period, MinDiscoveryPeriod)
	}
	if a.err != nil {
		return a
	}
	factory := apiextensionsinformers.NewSharedInformerFactoryWithOptions(crds, 0, apiextensionsinformers.WithTransform(slimCRD))
	a.crds = factory.Apiextensions().V1().CustomResourceDefinitions().Informer()
	return a
}

// Err reports why the APIs cannot work (a nil clientset, an option of
// NewInformer, a discovery period too short, an Informer that cannot be
// followed), or nil.
func (a *APIs) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// add makes f follow a; it fails once a has started.
func (a *APIs) add(f follower) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.started:
		return errors.New("optional: NewInformer called after the APIs started")
	case f.byDiscovery() && a.disc == nil:
		return fmt.Errorf("optional: %s is followed by discovery, but the APIs have no discovery client", resourceName(f.resource()))
	}
	a.followers = append(a.followers, f)
	return nil
}

// Start starts following the cluster's APIs and running the Informers of
// the resources it serves, until stopCh is closed. Logs go to klog's
// global logger; StartWithContext takes the logger from its context.
// Start does nothing after the first call, or if Err is not nil.
func (a *APIs) Start(stopCh <-chan struct{}) {
	a.StartWithContext(wait.ContextForChannel(stopCh))
}

// StartWithContext is Start until ctx ends, with ctx's logger.
func (a *APIs) StartWithContext(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started || a.err != nil {
		return
	}
	a.started = true
	logger := klog.FromContext(ctx)
	if a.cfg.name != "" {
		logger = logger.WithValues("apis", a.cfg.name)
	}
	ctx = klog.NewContext(ctx, logger)
	if _, err := a.crds.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { a.wake() },
		UpdateFunc: func(any, any) { a.wake() },
		DeleteFunc: func(any) { a.wake() },
	}); err != nil {
		a.err = fmt.Errorf("optional: watching CRDs: %w", err)
		return
	}
	for _, f := range a.followers {
		a.setState(f.resource(), Waiting)
	}
	var byDiscovery []schema.GroupVersion
	for _, f := range a.followers {
		if gv := f.resource().GroupVersion(); f.byDiscovery() && !slices.Contains(byDiscovery, gv) {
			byDiscovery = append(byDiscovery, gv)
		}
	}
	followers := slices.Clone(a.followers)
	a.wg.Go(func() { a.crds.RunWithContext(ctx) })
	if len(byDiscovery) > 0 {
		a.wg.Go(func() { a.discoverEvery(ctx, byDiscovery, followers) })
	}
	a.wg.Go(func() { a.loop(ctx, followers, byDiscovery) })
}

// wake makes the loop decide again.
func (a *APIs) wake() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// loop decides, after every CRD change and every answer of discovery,
// which Informers run, until ctx ends; then it stops them all and
// removes their states from the metrics.
func (a *APIs) loop(ctx context.Context, followers []follower, byDiscovery []schema.GroupVersion) {
	defer func() {
		for _, f := range followers {
			f.stop()
			if a.cfg.metrics != nil {
				a.cfg.metrics.DeleteAPIWatchState(a.cfg.name, resourceName(f.resource()))
			}
		}
	}()
	if !cache.WaitForCacheSync(ctx.Done(), a.crds.HasSynced) {
		return
	}
	for {
		a.discMu.Lock()
		discovered := maps.Clone(a.discovered)
		asked := maps.Clone(a.asked)
		a.discMu.Unlock()
		all := true
		for _, f := range followers {
			gvr := f.resource()
			if f.byDiscovery() {
				f.follow(ctx, discovered[gvr.GroupVersion()][gvr.Resource], "")
				if !asked[gvr.GroupVersion()] {
					all = false
					continue
				}
			} else {
				served, uid := a.servedByCRD(gvr)
				f.follow(ctx, served, uid)
			}
			f.decided()
		}
		if all {
			a.synced.Store(true)
		}
		select {
		case <-ctx.Done():
			return
		case <-a.kick:
		}
	}
}

// holdOff is how many of discovery's answers serving a group version are
// not believed, after its watches answered 503.
type holdOff struct {
	// left is how many answers serving it are still not believed.
	left int
	// length is the last hold-off, in answers: doubled at each 503 of
	// the watches started after it, reset once they have synced.
	length int
}

// errUnavailable is discover's error for a group version that discovery
// reports unavailable.
var errUnavailable = errors.New("group version unavailable")

// discoverEvery asks discovery about each of gvs now and every discovery
// period, until ctx ends, and wakes the loop with each answer: one
// goroutine per group version, so that a request that hangs delays only
// the next answers about its own group version. A group version whose
// request failed is asked again after FirstDiscoveryRetry, then twice as
// long at each failure in a row, up to the period. It returns once every
// goroutine has.
func (a *APIs) discoverEvery(ctx context.Context, gvs []schema.GroupVersion, followers []follower) {
	var wg sync.WaitGroup
	for _, gv := range gvs {
		wg.Go(func() { a.discoverOne(ctx, gv, followers) })
	}
	wg.Wait()
}

// discoverOne asks discovery about gv now and every discovery period (or
// sooner after a failure, see discoverEvery), until ctx ends.
func (a *APIs) discoverOne(ctx context.Context, gv schema.GroupVersion, followers []follower) {
	var retry time.Duration
	// unwatchable holds the followed resources of gv discovery serves
	// without list or watch, logged once until they are watchable.
	unwatchable := map[string]bool{}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		served, verbs, err := a.discover(ctx, gv)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			a.logUnwatchable(ctx, gv, verbs, unwatchable, followers)
		}
		next := a.cfg.period
		if err != nil {
			retry = min(max(a.cfg.retry, 2*retry), a.cfg.period)
			next = retry
		} else {
			retry = 0
		}
		switch {
		case errors.Is(err, errUnavailable):
			a.record(gv, nil, false, followers)
		case err != nil:
			a.recordFailure(gv)
		default:
			a.record(gv, served, true, followers)
		}
		a.wake()
		t.Reset(next)
	}
}

// recordFailure keeps that discovery was asked about gv and failed: the
// last answer stands, and none means that gv is not served.
func (a *APIs) recordFailure(gv schema.GroupVersion) {
	a.discMu.Lock()
	defer a.discMu.Unlock()
	a.asked[gv] = true
}

// record keeps discovery's answer about gv: served, the resources it
// serves, when it answered; none, when it reported gv unavailable (gv is
// then not served).
// While gv is held off, an answer serving it is counted and not
// believed; once the watches of gv's resources have synced, or discovery
// answers that gv serves nothing (it was removed), its hold-off is
// reset.
func (a *APIs) record(gv schema.GroupVersion, served map[string]bool, answered bool, followers []follower) {
	a.discMu.Lock()
	defer a.discMu.Unlock()
	a.asked[gv] = true
	if !answered {
		if _, ok := a.discovered[gv]; ok {
			a.discovered[gv] = map[string]bool{}
		}
		return
	}
	if len(served) == 0 {
		delete(a.holds, gv)
	}
	if h := a.holds[gv]; h != nil && len(served) > 0 {
		if h.left > 0 {
			h.left--
			a.discovered[gv] = map[string]bool{}
			return
		}
		running := false
		synced := true
		for _, f := range followers {
			if f.byDiscovery() && f.resource().GroupVersion() == gv && f.running() {
				running = true
				synced = synced && f.syncedNow()
			}
		}
		if running && synced {
			delete(a.holds, gv)
		}
	}
	a.discovered[gv] = served
}

// watchUnavailable takes gv as no longer served after a watch of one of
// its resources answered 503, and holds it off: discovery's next answers
// serving it are not believed for twice as many periods as the last
// hold-off (at least one, at most MaxHoldOffPeriods). Only the first 503
// after gv was served counts.
func (a *APIs) watchUnavailable(gv schema.GroupVersion) {
	a.discMu.Lock()
	if len(a.discovered[gv]) > 0 {
		h := a.holds[gv]
		if h == nil {
			h = &holdOff{}
			a.holds[gv] = h
		}
		h.length = min(max(1, 2*h.length), MaxHoldOffPeriods)
		h.left = h.length
		a.discovered[gv] = map[string]bool{}
	}
	a.discMu.Unlock()
	a.wake()
}

// logUnwatchable logs, once until it is watchable again, each resource
// of gv followed by discovery that discovery serves without the verbs
// list and watch (verbs, by resource).
func (a *APIs) logUnwatchable(ctx context.Context, gv schema.GroupVersion, verbs map[string][]string, logged map[string]bool, followers []follower) {
	for _, f := range followers {
		gvr := f.resource()
		if !f.byDiscovery() || gvr.GroupVersion() != gv {
			continue
		}
		v, ok := verbs[gvr.Resource]
		switch {
		case !ok:
			delete(logged, gvr.Resource)
		case !logged[gvr.Resource]:
			logged[gvr.Resource] = true
			klog.FromContext(ctx).Info("Resource served without the verbs list and watch: it cannot be watched, so it is taken as not served", "resource", resourceName(gvr), "verbs", v)
		}
	}
}

// discover asks discovery which resources of gv are served and can be
// watched, within DiscoveryTimeout and until ctx ends; it also returns
// the verbs of those it serves that cannot (see watchable). A group
// version discovery does not know serves none; one discovery reports
// unavailable (see unavailable) yields errUnavailable; any other error is
// returned.
func (a *APIs) discover(ctx context.Context, gv schema.GroupVersion) (served map[string]bool, unwatchable map[string][]string, err error) {
	reqCtx, cancel := context.WithTimeout(ctx, DiscoveryTimeout)
	defer cancel()
	list, err := resourcesFor(reqCtx, a.disc, gv)
	if apierrors.IsNotFound(err) {
		return map[string]bool{}, nil, nil
	}
	if unavailable(err, gv) {
		klog.FromContext(ctx).V(2).Info("Discovery reports the group version unavailable; its resources are not served", "groupVersion", gv.String(), "err", err.Error())
		return nil, nil, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Discovery failed; keeping what it said last", "groupVersion", gv.String(), "err", err.Error())
		return nil, nil, err
	}
	served, unwatchable = map[string]bool{}, map[string][]string{}
	for _, r := range list.APIResources {
		if watchable(r.Verbs) {
			served[r.Name] = true
		} else {
			unwatchable[r.Name] = r.Verbs
		}
	}
	return served, unwatchable, nil
}

// resourcesFor asks disc for the resources of gv until ctx ends. A
// client without the WithContext methods (a user's own wrapper) cannot be
// cancelled: its request is left to finish in a goroutine of its own, so
// that neither the timeout nor the stop waits for it.
func resourcesFor(ctx context.Context, disc discovery.DiscoveryInterface, gv schema.GroupVersion) (*metav1.APIResourceList, error) {
	if withCtx, ok := disc.(discovery.DiscoveryInterfaceWithContext); ok {
		return withCtx.ServerResourcesForGroupVersionWithContext(ctx, gv.String())
	}
	type answer struct {
		list *metav1.APIResourceList
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		list, err := disc.ServerResourcesForGroupVersion(gv.String())
		done <- answer{list, err}
	}()
	select {
	case a := <-done:
		return a.list, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("discovery of %s: %w", gv, context.Cause(ctx))
	}
}

// watchable reports whether a resource discovery serves with verbs can
// be listed and watched. A resource without verbs (discovery that does
// not report them, as some fakes) is taken as watchable.
func watchable(verbs metav1.Verbs) bool {
	return len(verbs) == 0 || slices.Contains(verbs, "list") && slices.Contains(verbs, "watch")
}

// unavailable reports whether err says that gv is unavailable: a 503
// (ServiceUnavailable: an aggregated API whose backend is down), or a
// group version that aggregated discovery marks stale or failed so.
func unavailable(err error, gv schema.GroupVersion) bool {
	var stale discovery.StaleGroupVersionError
	var failed *discovery.ErrGroupDiscoveryFailed
	switch {
	case err == nil:
		return false
	case apierrors.IsServiceUnavailable(err), errors.As(err, &stale):
		return true
	case errors.As(err, &failed):
		gvErr, ok := failed.Groups[gv]
		return ok && unavailable(gvErr, gv)
	}
	return false
}

// servedByCRD reports whether the CRD of gvr is established and serves
// gvr's version, and the CRD's UID. A CRD being deleted still serves its
// objects while the API server deletes them: their finalizers may be the
// controller's.
func (a *APIs) servedByCRD(gvr schema.GroupVersionResource) (bool, types.UID) {
	obj, exists, err := a.crds.GetStore().GetByKey(gvr.Resource + "." + gvr.Group)
	if err != nil || !exists {
		return false, ""
	}
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return false, ""
	}
	established := false
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			established = true
		}
	}
	return established && slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
		return v.Name == gvr.Version && v.Served
	}), crd.UID
}

// Served reports whether gvr is served, as far as the APIs know: from its
// CRD; false for a resource no CRD defines (see FromDiscovery, whose
// answer is the Informer's State).
func (a *APIs) Served(gvr schema.GroupVersionResource) bool {
	if a.crds == nil {
		return false
	}
	served, _ := a.servedByCRD(gvr)
	return served
}

// HasSynced reports whether the APIs have decided for every Informer
// whether its resource is served, and started it or left it waiting
// accordingly: the CRD informer has synced and discovery has been asked
// about every group version of the resources declared with FromDiscovery
// (a failed request counts: its resources are taken as not served). It
// says nothing of the Informers' own informers; each Informer's HasSynced
// depends on its own resource only.
func (a *APIs) HasSynced() bool { return a.synced.Load() }

// WaitForCacheSync waits until the CRD informer has synced and every
// Informer has synced (see Informer.HasSynced: its resource decided and,
// if served, its informer synced), or stopCh is closed. It reports, by
// the object type of the CRD informer and of each Informer, whether they
// have (Informers of one type are reported together): the CRD informer's
// by itself, never held back by discovery.
func (a *APIs) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	a.mu.Lock()
	followers := slices.Clone(a.followers)
	a.mu.Unlock()
	synced := func() bool {
		if a.crds == nil || !a.crds.HasSynced() {
			return false
		}
		for _, f := range followers {
			if !f.hasSynced() {
				return false
			}
		}
		return true
	}
	cache.WaitForCacheSync(stopCh, synced)
	res := map[reflect.Type]bool{reflect.TypeFor[*apiextensionsv1.CustomResourceDefinition](): a.crds != nil && a.crds.HasSynced()}
	for _, f := range followers {
		t := f.objectType()
		if prev, seen := res[t]; seen {
			res[t] = prev && f.hasSynced()
		} else {
			res[t] = f.hasSynced()
		}
	}
	return res
}

// Shutdown waits until the goroutines of Start have returned: the CRD
// informer, the loop, every Informer's informer and the discovery
// goroutines, one per group version (a discovery request in flight is
// cancelled by the end of Start's context). The states of the Informers are removed from the
// metrics. Close Start's stopCh (or end its context) first.
func (a *APIs) Shutdown() { a.wg.Wait() }

// setState records an Informer's state in the metrics.
func (a *APIs) setState(gvr schema.GroupVersionResource, s State) {
	if a.cfg.metrics != nil {
		a.cfg.metrics.SetAPIWatchState(a.cfg.name, resourceName(gvr), s)
	}
}

// resourceName names gvr as "resource.group/version" ("resource/version"
// for the core group).
func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource + "/" + gvr.Version
	}
	return gvr.Resource + "." + gvr.Group + "/" + gvr.Version
}

// slimCRD keeps of a CRD what APIs reads: its name, deletion, versions'
// names and served flags, and conditions; the schemas can be large.
func slimCRD(obj any) (any, error) {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return obj, nil
	}
	slim := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{
			Name: crd.Name, UID: crd.UID, ResourceVersion: crd.ResourceVersion, DeletionTimestamp: crd.DeletionTimestamp,
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: crd.Spec.Group, Names: crd.Spec.Names},
	}
	for _, v := range crd.Spec.Versions {
		slim.Spec.Versions = append(slim.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v.Name, Served: v.Served, Storage: v.Storage})
	}
	for _, c := range crd.Status.Conditions {
		slim.Status.Conditions = append(slim.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{Type: c.Type, Status: c.Status})
	}
	return slim, nil
}
