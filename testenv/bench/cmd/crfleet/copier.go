package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mchandler "sigs.k8s.io/multicluster-runtime/pkg/handler"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/basic"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
	mcsource "sigs.k8s.io/multicluster-runtime/pkg/source"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"
)

// A source is a ConfigMap of the management cluster labelled LabelCopy; its
// copy in every member cluster has the same namespace, name and data, and
// the label LabelCopiedBy. The state of each copy is an annotation of the
// source, StatusPrefix+member: "Synced", "Pending", "Conflict: ..." or
// "Unreachable: ...". The members are the Secrets labelled MemberLabel=true.
const (
	LabelCopy     = "fleet.ctrlkit.io/copy"
	LabelCopiedBy = "fleet.ctrlkit.io/copied-by"
	StatusPrefix  = "status.fleet.ctrlkit.io/"
	MemberLabel   = "multicluster.ctrlkit.io/kubeconfig"
	fleetName     = "configmap-copier"

	StateSynced      = "Synced"
	StatePending     = "Pending"
	StateConflict    = "Conflict"
	StateUnreachable = "Unreachable"

	// ReasonConflict is the reason of the Warning event, in a member
	// cluster, on a ConfigMap of a source's name that is not a copy.
	ReasonConflict = "NotACopy"

	// statusResync is how often the states are written again: members
	// join, leave and stop answering without any source changing.
	statusResync = 5 * time.Second
	// unreachableAfter failed probes in a row, a member is Unreachable.
	unreachableAfter = 3
)

// errNotACopy refuses a ConfigMap of a member that this operator did not
// create.
var errNotACopy = errors.New("exists and is not a copy (no label " + LabelCopiedBy + ")")

var (
	sourceSelector = labels.SelectorFromSet(labels.Set{LabelCopy: "true"})
	copySelector   = labels.SelectorFromSet(labels.Set{LabelCopiedBy: fleetName})
	memberSelector = labels.SelectorFromSet(labels.Set{MemberLabel: "true"})
)

// Options are the copier's own settings.
type Options struct {
	Namespace        string        // of the sources
	MembersNamespace string        // of the members' kubeconfig Secrets
	Workers          int           // reconciles at once, per controller
	ProbeInterval    time.Duration // between two probes of a member
}

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",namespace=fleet-system,resources=secrets,verbs=get;list;watch

// NewManager returns the operator, to be started: a multicluster manager of
// the management cluster at cfg (with mgrOpts, but its caches, which hold
// only the sources and the members' Secrets), whose members come from the
// kubeconfig provider and are engaged by coordinator (nil: each one by this
// replica), running the copy and status controllers.
func NewManager(ctx context.Context, cfg *rest.Config, o Options, mgrOpts ctrl.Options, coordinator mcmanager.Coordinator) (mcmanager.Manager, error) {
	mgrOpts.Cache.ByObject = map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{o.Namespace: {}}, Label: sourceSelector},
		&corev1.Secret{}:    {Namespaces: map[string]cache.Config{o.MembersNamespace: {}}, Label: memberSelector},
	}
	provider := kubeconfig.New(kubeconfig.Options{
		Namespace:             o.MembersNamespace,
		KubeconfigSecretLabel: MemberLabel,
		KubeconfigSecretKey:   "kubeconfig",
		// A member's cache holds only the copies (a default selector: one
		// by object would ask the member's API server in cluster.New).
		ClusterOptions: []cluster.Option{func(co *cluster.Options) { co.Cache.DefaultLabelSelector = copySelector }},
		RESTOptions:    []func(*rest.Config) error{func(c *rest.Config) error { c.UserAgent = "crfleet"; return nil }},
	})
	fleet := &Fleet{probeInterval: o.ProbeInterval, everyMember: coordinator == nil,
		held: map[string]*member{}, failed: map[string]error{}, conflicts: map[mcreconcile.Request]bool{}}
	if coordinator == nil {
		coordinator = basic.New()
	}
	mgr, err := mcmanager.New(cfg, provider, mgrOpts, mcmanager.WithCoordinator(recordingCoordinator{coordinator, fleet}))
	if err != nil {
		return nil, err
	}
	if err := provider.SetupWithManager(ctx, mgr); err != nil {
		return nil, err
	}
	statusChanged := make(chan event.TypedGenericEvent[*corev1.ConfigMap])
	local := mgr.GetLocalManager()
	// mcbuilder takes only some of the manager's controller options.
	ctrlOpts := controller.TypedOptions[mcreconcile.Request]{MaxConcurrentReconciles: o.Workers, SkipNameValidation: mgrOpts.Controller.SkipNameValidation}
	copies, err := mcbuilder.ControllerManagedBy(mgr).
		Named("copies").
		For(&corev1.ConfigMap{}).
		WithOptions(ctrlOpts).
		Build(&CopyReconciler{Manager: mgr, Sources: local.GetClient(), Fleet: fleet, StatusChanged: statusChanged})
	if err != nil {
		return nil, err
	}
	// Each member also gets every source, at once and on every change, as
	// the request of its copy there.
	sources := mcsource.Kind[client.Object](&corev1.ConfigMap{}, mchandler.Lift(&handler.EnqueueRequestForObject{}))
	if err := copies.MultiClusterWatch(fromCluster{sources, local}); err != nil {
		return nil, err
	}
	err = mcbuilder.ControllerManagedBy(mgr).
		Named("copy-status").
		For(&corev1.ConfigMap{}, mcbuilder.WithEngageWithLocalCluster(true), mcbuilder.WithEngageWithProviderClusters(false)).
		WatchesRawSource(source.TypedChannel(statusChanged,
			mchandler.TypedForCluster[*corev1.ConfigMap](&handler.TypedEnqueueRequestForObject[*corev1.ConfigMap]{}, mcmanager.LocalCluster))).
		WithOptions(ctrlOpts).
		Complete(&StatusReconciler{Client: local.GetClient(), MembersNamespace: o.MembersNamespace, Fleet: fleet})
	if err != nil {
		return nil, err
	}
	// Added last, the fleet is engaged with a member once the controllers are.
	return mgr, mgr.Add(fleet)
}

// fromCluster is a source of every member made of a source of one other
// cluster: engaged with a member, it watches that cluster in its stead.
type fromCluster struct {
	mcsource.Source
	cluster cluster.Cluster
}

// ForCluster returns the source for the member name.
func (s fromCluster) ForCluster(name string, _ cluster.Cluster) (source.TypedSource[mcreconcile.Request], bool, error) {
	return s.Source.ForCluster(name, s.cluster)
}

// CopyReconciler makes the copy of each source in each member match it.
type CopyReconciler struct {
	Manager       mcmanager.Manager
	Sources       client.Reader // of the management cluster
	Fleet         *Fleet
	StatusChanged chan<- event.TypedGenericEvent[*corev1.ConfigMap] // the sources whose state may have changed
}

// Reconcile makes the copy of req's source in req's member match the
// source: created (with its namespace), updated, or deleted once the source
// is gone. A ConfigMap of that name that is not a copy is left alone, with a
// Warning event beside it.
func (r *CopyReconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (_ ctrl.Result, err error) {
	defer func() {
		r.Fleet.refused(req, errors.Is(err, errNotACopy))
		changed := event.TypedGenericEvent[*corev1.ConfigMap]{Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}}
		select {
		case r.StatusChanged <- changed:
		case <-ctx.Done():
		}
	}()
	cl, err := r.Manager.GetCluster(ctx, req.ClusterName)
	if err != nil {
		return ctrl.Result{}, err
	}
	var src, cp corev1.ConfigMap
	err = r.Sources.Get(ctx, req.NamespacedName, &src)
	if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	isSource := err == nil
	err = cl.GetClient().Get(ctx, req.NamespacedName, &cp) // a copy: the member's cache holds no other ConfigMaps
	found := err == nil
	switch {
	case client.IgnoreNotFound(err) != nil:
		return ctrl.Result{}, err
	case !isSource && found:
		return ctrl.Result{}, client.IgnoreNotFound(cl.GetClient().Delete(ctx, &cp, client.Preconditions{UID: &cp.UID}))
	case !isSource:
		return ctrl.Result{}, nil
	case found && maps.Equal(cp.Data, src.Data) && maps.EqualFunc(cp.BinaryData, src.BinaryData, bytes.Equal):
		return ctrl.Result{}, nil
	case found:
		cp.Data, cp.BinaryData = src.Data, src.BinaryData
		return ctrl.Result{}, cl.GetClient().Update(ctx, &cp)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: req.Namespace}}
	if err := cl.GetClient().Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		return ctrl.Result{}, err
	}
	cp = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name, Labels: map[string]string{LabelCopiedBy: fleetName}},
		Data: src.Data, BinaryData: src.BinaryData}
	if err := cl.GetClient().Create(ctx, &cp); !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, err
	}
	// Not cached: a copy not seen yet (retried), or somebody else's.
	var live corev1.ConfigMap
	if err := cl.GetAPIReader().Get(ctx, req.NamespacedName, &live); err != nil {
		return ctrl.Result{}, err
	}
	if live.Labels[LabelCopiedBy] == fleetName {
		return ctrl.Result{}, fmt.Errorf("copy %s is not cached yet", req)
	}
	cl.GetEventRecorder(fleetName).Eventf(&live, nil, corev1.EventTypeWarning, ReasonConflict, "Copy",
		"Not copying %s here: a ConfigMap of its name %s", req.NamespacedName, errNotACopy)
	return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("ConfigMap %s %w", req, errNotACopy))
}

// StatusReconciler writes the state of each source's copies into the
// source's annotations.
type StatusReconciler struct {
	client.Client           // of the management cluster
	MembersNamespace string // of the members' kubeconfig Secrets
	Fleet            *Fleet
}

// Reconcile writes the state of the copy of req's source in every member
// this replica holds, and removes the states of the members that left.
// The members other replicas hold are theirs to report.
func (r *StatusReconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	var src corev1.ConfigMap
	if err := r.Get(ctx, req.NamespacedName, &src); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var secrets corev1.SecretList
	if err := r.List(ctx, &secrets, client.InNamespace(r.MembersNamespace)); err != nil {
		return ctrl.Result{}, err
	}
	orig := src.DeepCopy()
	members := map[string]bool{}
	for _, s := range secrets.Items {
		members[s.Name] = true
		if state, held := r.Fleet.state(ctx, s.Name, &src); held {
			metav1.SetMetaDataAnnotation(&src.ObjectMeta, StatusPrefix+s.Name, state)
		}
	}
	for k := range src.Annotations {
		if name, ok := strings.CutPrefix(k, StatusPrefix); ok && !members[name] {
			delete(src.Annotations, k)
		}
	}
	if !maps.Equal(orig.Annotations, src.Annotations) {
		if err := r.Patch(ctx, &src, client.MergeFrom(orig)); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: statusResync}, nil
}

// Fleet is what the two controllers share of the members: those held by
// this replica and whether they answer, those that could not be engaged,
// and the copies refused. As a runnable of the manager it probes the
// members it holds.
type Fleet struct {
	probeInterval time.Duration
	everyMember   bool // this replica holds every member (no sharding)

	mu        sync.Mutex
	held      map[string]*member           // until their engagement ends
	failed    map[string]error             // why their engagement failed, until one succeeds
	conflicts map[mcreconcile.Request]bool // copies refused, until the next reconcile of their request
}

// member is a member cluster held by this replica.
type member struct {
	ctx      context.Context // of its engagement
	cluster  cluster.Cluster
	version  rest.Interface // probed at /version
	failures int            // probes failed in a row
	err      error          // of the last probe that failed
}

// Engage holds a member with which the controllers are engaged.
func (f *Fleet) Engage(ctx context.Context, name string, cl cluster.Cluster) error {
	d, err := discovery.NewDiscoveryClientForConfigAndClient(cl.GetConfig(), cl.GetHTTPClient())
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held[name] = &member{ctx: ctx, cluster: cl, version: d.RESTClient()}
	delete(f.failed, name)
	return nil
}

// Start probes the members held every probe interval until ctx is done.
func (f *Fleet) Start(ctx context.Context) error {
	t := time.NewTicker(f.probeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		var wg sync.WaitGroup
		for _, m := range f.members() {
			wg.Go(func() {
				probeCtx, cancel := context.WithTimeout(ctx, f.probeInterval)
				defer cancel()
				err := m.version.Get().AbsPath("/version").Do(probeCtx).Error()
				f.mu.Lock()
				defer f.mu.Unlock()
				if m.failures, m.err = m.failures+1, err; err == nil {
					m.failures = 0
				}
			})
		}
		wg.Wait()
	}
}

// members returns the members held, forgetting those whose engagement
// ended.
func (f *Fleet) members() []*member {
	f.mu.Lock()
	defer f.mu.Unlock()
	var held []*member
	for name, m := range f.held {
		if m.ctx.Err() != nil {
			delete(f.held, name)
			continue
		}
		held = append(held, m)
	}
	return held
}

// refused records whether the last reconcile of req refused the copy.
func (f *Fleet) refused(req mcreconcile.Request, refused bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.conflicts, req)
	if refused {
		f.conflicts[req] = true
	}
}

// state returns the state of src's copy in the member name, and whether
// this replica holds the member.
func (f *Fleet) state(ctx context.Context, name string, src *corev1.ConfigMap) (state string, held bool) {
	req := mcreconcile.Request{ClusterName: name, Request: reconcile.Request{NamespacedName: client.ObjectKeyFromObject(src)}}
	f.mu.Lock()
	m, engaged := f.held[name]
	engaged = engaged && m.ctx.Err() == nil
	failed := f.failed[name]
	refused := f.conflicts[req]
	unreachable := engaged && m.failures >= unreachableAfter
	if unreachable {
		failed = m.err
	}
	f.mu.Unlock()
	switch {
	case unreachable || (!engaged && failed != nil):
		return StateUnreachable + ": " + failed.Error(), true
	case !engaged:
		return StatePending, f.everyMember
	case refused:
		return StateConflict + ": " + errNotACopy.Error(), true
	}
	var cp corev1.ConfigMap
	if err := m.cluster.GetClient().Get(ctx, req.NamespacedName, &cp); err != nil || !maps.Equal(cp.Data, src.Data) || !maps.EqualFunc(cp.BinaryData, src.BinaryData, bytes.Equal) {
		return StatePending, true
	}
	return StateSynced, true
}

// recordingCoordinator is a coordinator whose runnables tell the fleet why
// their engagement with a member failed: multicluster-runtime only logs it
// (a member that cannot be reached cannot be engaged) and tries again.
type recordingCoordinator struct {
	mcmanager.Coordinator
	fleet *Fleet
}

// AddRunnable adds r, its engagement failures recorded.
func (c recordingCoordinator) AddRunnable(r multicluster.Aware) {
	c.Coordinator.AddRunnable(recordingAware{r, c.fleet})
}

// recordingAware is a runnable whose engagement failures are recorded.
type recordingAware struct {
	multicluster.Aware
	fleet *Fleet
}

// Engage engages the runnable with a member, recording why it failed.
func (a recordingAware) Engage(ctx context.Context, name string, cl cluster.Cluster) error {
	err := a.Aware.Engage(ctx, name, cl)
	if err != nil {
		a.fleet.mu.Lock()
		a.fleet.failed[name] = err
		a.fleet.mu.Unlock()
	}
	return err
}
