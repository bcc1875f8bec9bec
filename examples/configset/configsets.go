package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/configset/generated/clientset/versioned"
	fleetclient "github.com/ctrlkit/ctrlkit/examples/configset/generated/clientset/versioned/typed/fleet/v1alpha1"
	fleetinformers "github.com/ctrlkit/ctrlkit/examples/configset/generated/informers/externalversions/fleet/v1alpha1"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/condition"
	"github.com/ctrlkit/ctrlkit/reconcile/finalizer"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

const (
	fleetName = "configset-operator"
	// memberTimeout bounds one member's part of a reconcile.
	memberTimeout = 10 * time.Second
)

// eventTypes are the types of the events of the Ready condition's
// transitions: a Warning when it turns False or Unknown.
var eventTypes = map[metav1.ConditionStatus]string{metav1.ConditionTrue: corev1.EventTypeNormal, metav1.ConditionFalse: corev1.EventTypeWarning, metav1.ConditionUnknown: corev1.EventTypeWarning}

// errNotOurs refuses a ConfigMap of a member that the operator does not own.
var errNotOurs = errors.New("a ConfigMap of this name exists without the label " + fleetv1alpha1.LabelManagedBy + ": it is left alone")

// member is what the operator keeps of a member cluster: its client and
// its cache of the ConfigMaps the operator owns there.
type member struct {
	client     kubernetes.Interface
	configMaps *write.Objects[*corev1.ConfigMap]
}

// configSets applies the ConfigSets to the members, hub-centric: one
// reconcile of a ConfigSet walks the members and writes its status.
type configSets struct {
	client  fleetclient.FleetV1alpha1Interface
	fleet   *multicluster.Fleet[*member]
	hub     *queue.Controller[cache.ObjectName]
	results *multicluster.Results[cache.ObjectName, struct{}]
	ready   *condition.Writer[*fleetv1alpha1.ConfigSet]
}

// newConfigSets wires the fleet and the ConfigSet controller, which
// reconciles a ConfigSet when it changes, when one of its ConfigMaps in a
// member changes, and when a member joins, leaves, becomes ready or not.
func newConfigSets(client versioned.Interface, sets fleetinformers.TypedConfigSetInformer, recorder record.EventRecorder,
	provider multicluster.Provider, fleetOpts []multicluster.Option, opts ...queue.Option) (*configSets, error) {
	objects := write.New(sets.TypedInformer())
	c := &configSets{client: client.FleetV1alpha1(),
		ready: condition.New(objects, recorder, func(cs *fleetv1alpha1.ConfigSet) *[]metav1.Condition { return &cs.Status.Conditions },
			condition.WithObservedGeneration(func(cs *fleetv1alpha1.ConfigSet) *int64 { return &cs.Status.ObservedGeneration }))}
	var err error
	if c.fleet, err = multicluster.New(fleetName, provider, c.engage, fleetOpts...); err != nil {
		return nil, err
	}
	r := finalizer.Reconciler(fleetv1alpha1.Finalizer, objects, c.client.ConfigSets, finalizer.Funcs[*fleetv1alpha1.ConfigSet]{Apply: c.apply, Cleanup: c.cleanup})
	// A ConfigSet gone (its cleanup done, or its finalizer removed by
	// hand) has its results forgotten.
	gone := reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		if _, found, err := objects.Get(key); err == nil && !found {
			c.results.Forget(key)
		}
		return r.Reconcile(ctx, key)
	})
	if c.hub, err = queue.New("configsets", gone, opts...); err != nil {
		return nil, err
	}
	if c.results, err = multicluster.NewResults[struct{}](c.fleet, c.hub); err != nil {
		return nil, err
	}
	all := informer.AllKeys(sets.TypedInformer())
	return c, c.hub.Watch(queue.On(sets.TypedInformer(), informer.EnqueueHandler[*fleetv1alpha1.ConfigSet](c.hub)),
		multicluster.OnMembers(c.fleet, c.hub, func(multicluster.MemberChange) []cache.ObjectName { keys, _ := all(context.Background()); return keys }))
}

// engage caches a member's ConfigMaps that the operator owns; a change of
// one reconciles the ConfigSet of its name.
func (c *configSets) engage(_ context.Context, cl *multicluster.Cluster) (*member, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(cl.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = fleetv1alpha1.LabelManagedBy + "=" + fleetv1alpha1.ManagedBy
	}))
	cl.AddInformers(factory)
	configMaps := factory.Core().V1().ConfigMaps().TypedInformer()
	_, err := configMaps.AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](c.hub), cache.HandlerOptions{})
	return &member{client: cl.Client, configMaps: write.New(configMaps)}, err
}

// apply writes cs's ConfigMap to every member it goes to that is ready,
// deletes it from the others, and writes cs's status, with the members
// that are not ready as Unreachable and those it was not deleted from yet
// as Removing. A member whose write or deletion failed is retried; one
// that holds a ConfigMap that is not the operator's is reported, not
// retried: a change of cs tries again.
func (c *configSets) apply(ctx context.Context, cs *fleetv1alpha1.ConfigSet) (reconcile.Result, error) {
	// Asked before the members are listed and walked: a list taken after
	// holds every member, and a Fleet that syncs later adds the key again.
	key := cache.MetaObjectToName(cs)
	_, was := c.results.Status(key, 0, nil)
	synced, targets := was.Reason != multicluster.ReasonFleetNotSynced, c.fleet.Members()
	if len(cs.Spec.Members) > 0 {
		targets = cs.Spec.Members
	}
	errs := c.fleet.Each(ctx, memberTimeout, func(ctx context.Context, cluster string, m *member) error {
		if !slices.Contains(targets, cluster) {
			return m.remove(ctx, key)
		}
		err := m.apply(ctx, cs)
		if errors.Is(err, reconcile.ErrStaleCache) {
			return err // retried at once, no result
		}
		res := multicluster.MemberResult[struct{}]{Ready: err == nil, Reason: fleetv1alpha1.ReasonApplied, ObservedGeneration: cs.Generation}
		if errors.Is(err, errNotOurs) {
			res.Reason, res.Message, err = fleetv1alpha1.ReasonConflict, err.Error(), nil
		} else if err != nil {
			res.Reason, res.Message = fleetv1alpha1.ReasonFailed, err.Error()
		}
		c.results.Set(key, cluster, res)
		return err
	})
	listed := slices.Clone(targets) // and the members still to be removed from
	for _, m := range cs.Status.Members {
		if err, held := errs[m.Cluster]; !slices.Contains(targets, m.Cluster) && (err != nil || !held && !synced) {
			listed = append(listed, m.Cluster)
		}
	}
	return reconcile.Result{}, errors.Join(multicluster.Failed(errs), c.writeStatus(ctx, cs, targets, listed, errs, synced))
}

// writeStatus writes cs's per-member entries (of listed, those not in
// targets as Removing, with why their removal failed, errs[cluster]),
// counts (of targets) and Ready condition (over the entries) in one
// write, with a Warning event when Ready turns False. It writes nothing
// once the Fleet stops, nor unless it had synced before the walk
// (synced; Results adds the key again once it has): one that synced
// during the walk may have a member the walk found engaging ready now,
// listed Pending with no result. A restart does not flap a status that
// still holds.
func (c *configSets) writeStatus(ctx context.Context, cs *fleetv1alpha1.ConfigSet, targets, listed []string, errs map[string]error, synced bool) error {
	members, ready := c.results.Status(cache.MetaObjectToName(cs), cs.Generation, listed)
	if !synced || ready.Reason == multicluster.ReasonFleetStopping {
		return nil
	}
	_, err := c.ready.Update(ctx, c.client.ConfigSets(cs.Namespace), cs, func(cs *fleetv1alpha1.ConfigSet, set condition.SetFunc) error {
		cs.Status.Members, cs.Status.ReadyMembers, cs.Status.TotalMembers = members, 0, int32(len(targets))
		for i, m := range members {
			if !slices.Contains(targets, m.Cluster) && m.Reason != multicluster.ReasonNotHeld {
				members[i].Ready, members[i].Reason = false, fleetv1alpha1.ReasonRemoving
				if m.Reason != multicluster.ReasonUnreachable { // it answers: the removal failed
					members[i].Message = fmt.Sprintf("removal failed: %v", errs[m.Cluster])
				}
			} else if m.Ready {
				cs.Status.ReadyMembers++
			}
		}
		ready.Message = multicluster.Aggregate(cs.Generation, members).Message // a member Removing is not ready either way
		set(ready, eventTypes[ready.Status])
		return nil
	})
	return err
}

// cleanup deletes cs's ConfigMap from every member that is ready; the
// finalizer goes once the Fleet knows all its members (HasSynced) and
// every member is cleaned or no longer a member. One not ready (rotating,
// not answering, the Fleet stopping) is waited for, whatever cs's spec and
// status say: it may hold the ConfigMap from a write whose status write
// was lost. One its Provider refused is not.
func (c *configSets) cleanup(ctx context.Context, cs *fleetv1alpha1.ConfigSet) (reconcile.Result, error) {
	if !c.fleet.HasSynced() {
		return reconcile.Result{}, errors.New("the fleet has not learnt its members yet")
	}
	key := cache.MetaObjectToName(cs)
	errs := c.fleet.Each(ctx, memberTimeout, func(ctx context.Context, _ string, m *member) error { return m.remove(ctx, key) })
	var left []error
	for cluster, err := range errs { // every member, ready or not, but one its Provider refused
		if err != nil {
			left = append(left, fmt.Errorf("member %s not cleaned up: %w", cluster, err))
		}
	}
	return reconcile.Result{}, errors.Join(left...)
}

// apply makes the member hold cs's ConfigMap, creating its namespace
// with it.
func (m *member) apply(ctx context.Context, cs *fleetv1alpha1.ConfigSet) error {
	if _, found, _ := m.configMaps.Get(cache.MetaObjectToName(cs)); !found {
		if _, err := m.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cs.Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cs.Namespace, Name: cs.Name, Labels: map[string]string{fleetv1alpha1.LabelManagedBy: fleetv1alpha1.ManagedBy}}}
	_, _, err := m.configMaps.Ensure(ctx, m.client.CoreV1().ConfigMaps(cs.Namespace), want, func(cm *corev1.ConfigMap) error {
		if cm.Labels[fleetv1alpha1.LabelManagedBy] != fleetv1alpha1.ManagedBy {
			return errNotOurs
		}
		cm.Data = cs.Spec.Data
		return nil
	})
	return err
}

// remove deletes the member's ConfigMap of key, if the operator owns one.
func (m *member) remove(ctx context.Context, key cache.ObjectName) error {
	cm, found, err := m.configMaps.Get(key)
	if err != nil || !found {
		return err
	}
	return m.configMaps.Delete(ctx, m.client.CoreV1().ConfigMaps(key.Namespace), cm)
}
