package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/examples/external/system"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// Targets are ConfigMaps named targetPrefix+entry in one namespace, labelled
// managedBy, whose data is the entry's settings in the external System.
const (
	targetPrefix = "target-"
	managedBy    = "app.kubernetes.io/managed-by"
	managerName  = "ctrlkit-external"
	// ReasonSynced is the reason of the Normal event after a Target was
	// created or corrected.
	ReasonSynced = "Synced"
)

// errNotManaged refuses a ConfigMap that is not a Target.
var errNotManaged = errors.New("not managed by " + managerName)

// managedSelector selects the Targets.
var managedSelector = labels.SelectorFromSet(labels.Set{managedBy: managerName})

// targets keeps one Target per entry of the System in namespace.
type targets struct {
	namespace string
	system    *system.System
	kube      kubernetes.Interface
	lister    corelisters.ConfigMapLister
	// configMaps writes the Targets and keeps a reconcile from acting on a
	// cache that has not seen those writes.
	configMaps *write.Objects[*corev1.ConfigMap]
	recorder   record.EventRecorder
}

// newController wires the Target controller: notifications of the System at
// normal priority, a full sync when it starts and every resync after (with
// jitter) at low priority, and the Targets' own changes, so that an edit of
// a Target is undone.
func newController(sys *system.System, kube kubernetes.Interface, configMaps coreinformers.TypedConfigMapInformer, recorder record.EventRecorder,
	namespace string, resync time.Duration, opts ...queue.Option) (*queue.Controller[cache.ObjectName], error) {
	t := &targets{namespace: namespace, system: sys, kube: kube, lister: configMaps.Lister(),
		configMaps: write.New(configMaps.TypedInformer()), recorder: recorder}
	ctrl, err := queue.New("targets", reconcile.Reconciler[cache.ObjectName](t), opts...)
	if err != nil {
		return nil, err
	}
	return ctrl, ctrl.Watch(queue.Channel(ctrl, sys.Changes(), t.keysOf),
		queue.Periodic(ctrl, resync, t.all, queue.AtStart(), queue.LowPriority(), queue.Jitter(0.1)),
		queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl,
			informer.WithPredicates(informer.LabelSelector(managedSelector)))))
}

// keysOf maps changed entries to the keys of their Targets.
func (t *targets) keysOf(names []string) []cache.ObjectName {
	keys := make([]cache.ObjectName, 0, len(names))
	for _, n := range names {
		keys = append(keys, cache.ObjectName{Namespace: t.namespace, Name: targetPrefix + n})
	}
	return keys
}

// all lists the keys of every entry and of every Target, so that a resync
// also finds Targets whose entry went while no notification got through.
func (t *targets) all(context.Context) ([]cache.ObjectName, error) {
	keys := t.keysOf(t.system.Names())
	existing, err := t.lister.ConfigMaps(t.namespace).List(managedSelector)
	if err != nil {
		return nil, err
	}
	for _, cm := range existing {
		keys = append(keys, cache.MetaObjectToName(cm))
	}
	return keys, nil
}

// Reconcile makes the Target of key match its entry: created, corrected or
// deleted. Keys outside the namespace, or of ConfigMaps that are not
// Targets, are ignored.
func (t *targets) Reconcile(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
	name, ok := strings.CutPrefix(key.Name, targetPrefix)
	if key.Namespace != t.namespace || !ok {
		return reconcile.Result{}, nil
	}
	want, exists := t.system.Get(name)
	client := t.kube.CoreV1().ConfigMaps(key.Namespace)
	cm, found, err := t.configMaps.Get(key) // a stale cache is requeued quietly
	switch {
	case err != nil:
		return reconcile.Result{}, err
	case !exists && found:
		if err := t.configMaps.Delete(ctx, client, cm); err != nil {
			return reconcile.Result{}, fmt.Errorf("deleting Target %s: %w", key, err)
		}
		return reconcile.Result{}, nil
	case !exists:
		return reconcile.Result{}, nil
	}
	target := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{managedBy: managerName}}}
	written, change, err := t.configMaps.Ensure(ctx, client, target, func(cm *corev1.ConfigMap) error {
		if cm.Labels[managedBy] != managerName {
			return errNotManaged // a ConfigMap of a Target's name that is somebody else's
		}
		cm.Data = want
		return nil
	})
	switch {
	case errors.Is(err, errNotManaged):
		klog.FromContext(ctx).Info("Not touching a ConfigMap of a Target's name that this operator does not manage")
		return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("ConfigMap %s exists and is not managed by %s", key, managerName))
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("writing Target %s: %w", key, err)
	case change == write.Created:
		t.recorder.Event(written, corev1.EventTypeNormal, ReasonSynced, "Created from entry "+name)
	case change == write.Updated:
		t.recorder.Event(written, corev1.EventTypeNormal, ReasonSynced, "Updated from entry "+name)
	}
	return reconcile.Result{}, nil
}
