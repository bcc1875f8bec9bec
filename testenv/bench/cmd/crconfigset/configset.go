package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mchandler "sigs.k8s.io/multicluster-runtime/pkg/handler"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/fleetv1"
)

const (
	fleetName = "configset-operator"
	// resync is how often every ConfigSet is reconciled again: members
	// join, leave and stop answering without any ConfigSet changing.
	resync = 5 * time.Second
	// memberTimeout bounds one member's part of a reconcile.
	memberTimeout = 10 * time.Second

	ReasonAllMembersReady    = "AllMembersReady"
	ReasonMembersUnreachable = "MembersUnreachable"
	ReasonMembersNotReady    = "MembersNotReady"
	ReasonUnreachable        = "Unreachable"
)

var errNotOurs = errors.New("a ConfigMap of this name exists without the label " + fleetv1alpha1.LabelManagedBy + ": it is left alone")

// Options are the operator's own settings.
type Options struct {
	MembersNamespace string // of the members' kubeconfig Secrets
	MembersLabel     string // of the members' kubeconfig Secrets, =true
	MembersDataKey   string // of the kubeconfig in a Secret
	Workers          int
}

// +kubebuilder:rbac:groups=fleet.ctrlkit.io,resources=configsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fleet.ctrlkit.io,resources=configsets/status,verbs=update
// +kubebuilder:rbac:groups="",namespace=fleet-system,resources=secrets,verbs=get;list;watch

// NewManager returns the operator, to be started: a multicluster manager of
// the management cluster at cfg whose members come from the kubeconfig
// provider, running the ConfigSet controller.
func NewManager(ctx context.Context, cfg *rest.Config, o Options, mgrOpts ctrl.Options) (mcmanager.Manager, error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), fleetv1alpha1.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	mgrOpts.Scheme = scheme
	managed := labels.SelectorFromSet(labels.Set{fleetv1alpha1.LabelManagedBy: fleetv1alpha1.ManagedBy})
	mgrOpts.Cache.ByObject = map[client.Object]cache.ByObject{&corev1.Secret{}: {Namespaces: map[string]cache.Config{o.MembersNamespace: {}}}}
	provider := kubeconfig.New(kubeconfig.Options{
		Namespace:             o.MembersNamespace,
		KubeconfigSecretLabel: o.MembersLabel,
		KubeconfigSecretKey:   o.MembersDataKey,
		ClusterOptions:        []cluster.Option{func(co *cluster.Options) { co.Cache.DefaultLabelSelector = managed }},
	})
	mgr, err := mcmanager.New(cfg, provider, mgrOpts)
	if err != nil {
		return nil, err
	}
	if err := provider.SetupWithManager(ctx, mgr); err != nil {
		return nil, err
	}
	r := &ConfigSetReconciler{Manager: mgr, Client: mgr.GetLocalManager().GetClient(), Options: o,
		Recorder: mgr.GetLocalManager().GetEventRecorder(fleetName)}
	// A change of a member's ConfigMap reconciles the ConfigSet of its name.
	toConfigSet := func(string, cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
		return mchandler.TypedEnqueueRequestsFromMapFuncWithClusterPreservation(func(_ context.Context, o client.Object) []mcreconcile.Request {
			return []mcreconcile.Request{{ClusterName: mcmanager.LocalCluster, Request: reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)}}}
		})
	}
	return mgr, mcbuilder.ControllerManagedBy(mgr).
		Named("configsets").
		For(&fleetv1alpha1.ConfigSet{}, mcbuilder.WithEngageWithLocalCluster(true), mcbuilder.WithEngageWithProviderClusters(false)).
		Watches(&corev1.ConfigMap{}, toConfigSet, mcbuilder.WithEngageWithLocalCluster(false), mcbuilder.WithEngageWithProviderClusters(true)).
		WithOptions(controller.TypedOptions[mcreconcile.Request]{MaxConcurrentReconciles: o.Workers, SkipNameValidation: mgrOpts.Controller.SkipNameValidation}).
		Complete(r)
}

// ConfigSetReconciler applies each ConfigSet to the members and writes
// where it stands in each into its status.
type ConfigSetReconciler struct {
	Manager  mcmanager.Manager
	Client   client.Client // of the management cluster
	Recorder events.EventRecorder
	Options
}

// Reconcile applies the ConfigSet of req to every member it goes to, or,
// once it is being deleted, removes it from every member that had it
// before its finalizer goes.
func (r *ConfigSetReconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	var cs fleetv1alpha1.ConfigSet
	if err := r.Client.Get(ctx, req.NamespacedName, &cs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	members, err := r.members(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !cs.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.cleanup(ctx, &cs, members)
	}
	if controllerutil.AddFinalizer(&cs, fleetv1alpha1.Finalizer) {
		if err := r.Client.Update(ctx, &cs); err != nil {
			return ctrl.Result{}, err
		}
	}
	targets := members
	if len(cs.Spec.Members) > 0 {
		targets = slices.Sorted(slices.Values(cs.Spec.Members))
	}
	entries := make([]fleetv1.MemberStatus, len(targets))
	var failed []error
	for i, name := range targets {
		entries[i] = fleetv1.MemberStatus{Cluster: name, Ready: true, Reason: fleetv1alpha1.ReasonApplied, ObservedGeneration: cs.Generation}
		cl, err := r.Manager.GetCluster(ctx, name)
		if err != nil {
			entries[i].Ready, entries[i].Reason, entries[i].Message, entries[i].ObservedGeneration = false, ReasonUnreachable, err.Error(), 0
			continue
		}
		err = r.apply(ctx, cl, &cs)
		if err != nil {
			entries[i].Ready, entries[i].Reason, entries[i].Message = false, fleetv1alpha1.ReasonFailed, err.Error()
		}
		if errors.Is(err, errNotOurs) {
			entries[i].Reason, err = fleetv1alpha1.ReasonConflict, nil
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("member %s: %w", name, err))
		}
	}
	for _, name := range members { // removed from the members no longer named
		if cl, err := r.Manager.GetCluster(ctx, name); err == nil && !slices.Contains(targets, name) {
			if err := r.remove(ctx, cl, &cs); err != nil {
				failed = append(failed, fmt.Errorf("member %s: %w", name, err))
			}
		}
	}
	return ctrl.Result{RequeueAfter: resync}, errors.Join(append(failed, r.writeStatus(ctx, &cs, entries))...)
}

// members lists the members' names: the Secrets of the provider's.
func (r *ConfigSetReconciler) members(ctx context.Context) ([]string, error) {
	var secrets corev1.SecretList
	if err := r.Client.List(ctx, &secrets, client.InNamespace(r.MembersNamespace), client.MatchingLabels{r.MembersLabel: "true"}); err != nil {
		return nil, err
	}
	var names []string
	for _, s := range secrets.Items {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names, nil
}

// writeStatus writes the per-member entries, counts and Ready condition,
// with a Warning event when Ready turns False.
func (r *ConfigSetReconciler) writeStatus(ctx context.Context, cs *fleetv1alpha1.ConfigSet, entries []fleetv1.MemberStatus) error {
	orig := cs.DeepCopy()
	cs.Status.ObservedGeneration, cs.Status.Members, cs.Status.ReadyMembers, cs.Status.TotalMembers = cs.Generation, entries, 0, int32(len(entries))
	cond := metav1.Condition{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonAllMembersReady, ObservedGeneration: cs.Generation}
	var notReady []string
	for _, e := range entries {
		if e.Ready {
			cs.Status.ReadyMembers++
			continue
		}
		notReady = append(notReady, fmt.Sprintf("%s (%s: %s)", e.Cluster, e.Reason, e.Message))
		cond.Status, cond.Reason = metav1.ConditionFalse, cmpReason(cond.Reason, e.Reason)
	}
	if len(notReady) > 0 {
		cond.Message = fmt.Sprintf("%d of %d members not ready: %s", len(notReady), len(entries), strings.Join(notReady, ", "))
	} else {
		cond.Message = "Every member holds the ConfigMap"
	}
	old := meta.FindStatusCondition(orig.Status.Conditions, cond.Type)
	meta.SetStatusCondition(&cs.Status.Conditions, cond)
	if equalStatus(orig.Status, cs.Status) {
		return nil
	}
	if err := r.Client.Status().Update(ctx, cs); err != nil {
		return err
	}
	if old == nil || old.Status != cond.Status || old.Reason != cond.Reason {
		eventType := corev1.EventTypeNormal
		if cond.Status == metav1.ConditionFalse {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(cs, nil, eventType, cond.Reason, "Reconcile", cond.Message)
	}
	return nil
}

// cmpReason is the overall reason over one more member not ready.
func cmpReason(overall, member string) string {
	if member == ReasonUnreachable || overall == ReasonMembersUnreachable {
		return ReasonMembersUnreachable
	}
	return ReasonMembersNotReady
}

// equalStatus reports whether two statuses say the same.
func equalStatus(a, b fleetv1alpha1.ConfigSetStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration && slices.Equal(a.Members, b.Members) && a.ReadyMembers == b.ReadyMembers &&
		a.TotalMembers == b.TotalMembers && slices.EqualFunc(a.Conditions, b.Conditions, func(x, y metav1.Condition) bool { return x == y })
}

// cleanup removes cs's ConfigMap from every member that had it; the
// finalizer goes once each is cleaned or no longer a member.
func (r *ConfigSetReconciler) cleanup(ctx context.Context, cs *fleetv1alpha1.ConfigSet, members []string) error {
	had := slices.Concat(cs.Spec.Members, members)
	for _, m := range cs.Status.Members {
		had = append(had, m.Cluster)
	}
	var left []error
	for _, name := range members {
		if !slices.Contains(had, name) {
			continue
		}
		cl, err := r.Manager.GetCluster(ctx, name)
		if err == nil {
			err = r.remove(ctx, cl, cs)
		}
		if err != nil {
			left = append(left, fmt.Errorf("member %s not cleaned up: %w", name, err))
		}
	}
	if len(left) > 0 {
		return errors.Join(left...)
	}
	if controllerutil.RemoveFinalizer(cs, fleetv1alpha1.Finalizer) {
		return r.Client.Update(ctx, cs)
	}
	return nil
}

// apply makes the member hold cs's ConfigMap, with its namespace.
func (r *ConfigSetReconciler) apply(ctx context.Context, cl cluster.Cluster, cs *fleetv1alpha1.ConfigSet) error {
	ctx, cancel := context.WithTimeout(ctx, memberTimeout)
	defer cancel()
	var cm corev1.ConfigMap
	err := cl.GetClient().Get(ctx, client.ObjectKeyFromObject(cs), &cm) // the member's cache holds only those the operator owns
	switch {
	case err == nil && maps.Equal(cm.Data, cs.Spec.Data):
		return nil
	case err == nil:
		cm.Data = cs.Spec.Data
		return cl.GetClient().Update(ctx, &cm)
	case !apierrors.IsNotFound(err):
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cs.Namespace}}
	if err := cl.GetClient().Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cs.Namespace, Name: cs.Name,
		Labels: map[string]string{fleetv1alpha1.LabelManagedBy: fleetv1alpha1.ManagedBy}}, Data: cs.Spec.Data}
	if err := cl.GetClient().Create(ctx, &cm); !apierrors.IsAlreadyExists(err) {
		return err
	}
	// Not cached: one of the operator's not seen yet (retried), or somebody else's.
	var live corev1.ConfigMap
	if err := cl.GetAPIReader().Get(ctx, client.ObjectKeyFromObject(cs), &live); err != nil {
		return err
	}
	if live.Labels[fleetv1alpha1.LabelManagedBy] == fleetv1alpha1.ManagedBy {
		return fmt.Errorf("ConfigMap %s is not cached yet", client.ObjectKeyFromObject(cs))
	}
	return errNotOurs
}

// remove deletes the member's ConfigMap of cs, if the operator owns one.
func (r *ConfigSetReconciler) remove(ctx context.Context, cl cluster.Cluster, cs *fleetv1alpha1.ConfigSet) error {
	ctx, cancel := context.WithTimeout(ctx, memberTimeout)
	defer cancel()
	var cm corev1.ConfigMap
	if err := cl.GetClient().Get(ctx, client.ObjectKeyFromObject(cs), &cm); err != nil {
		return client.IgnoreNotFound(err)
	}
	return client.IgnoreNotFound(cl.GetClient().Delete(ctx, &cm, client.Preconditions{UID: &cm.UID}))
}
