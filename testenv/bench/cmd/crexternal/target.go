package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ctrlkit/ctrlkit/examples/external/system"
)

const (
	targetPrefix = "target-"
	managedBy    = "app.kubernetes.io/managed-by"
	managerName  = "ctrlkit-external"
)

// TargetReconciler keeps one Target per entry of the System in Namespace.
type TargetReconciler struct {
	client.Client
	APIReader client.Reader // reads past the cache, which holds only Targets
	Recorder  events.EventRecorder
	System    *system.System
	Namespace string
}

// SetupWithManager registers the controller: the Targets' own changes, the
// System's notifications, and a full resync at start and every resync (with
// jitter) at low priority.
func (r *TargetReconciler) SetupWithManager(mgr ctrl.Manager, workers int, resync time.Duration) error {
	notifications := make(chan event.TypedGenericEvent[[]string])
	resyncs := make(chan event.TypedGenericEvent[[]string])
	// Forward the System's notifications, and list everything periodically,
	// while this replica leads.
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		timer := time.NewTimer(0)
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case names := <-r.System.Changes():
				notifications <- event.TypedGenericEvent[[]string]{Object: names}
			case <-timer.C:
				resyncs <- event.TypedGenericEvent[[]string]{Object: r.System.Names()}
				timer.Reset(resync + time.Duration(rand.Int64N(int64(resync)/10+1)))
			}
		}
	}))
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("targets").
		For(&corev1.ConfigMap{}).
		WatchesRawSource(source.TypedChannel(notifications, r.enqueue(nil))).
		WatchesRawSource(source.TypedChannel(resyncs, r.enqueue(ptr.To(handler.LowPriority)))).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// enqueue maps changed entries to their Targets at the given priority; a
// resync also enqueues every existing Target.
func (r *TargetReconciler) enqueue(priority *int) handler.TypedEventHandler[[]string, reconcile.Request] {
	return handler.TypedFuncs[[]string, reconcile.Request]{
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[[]string], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			var reqs []reconcile.Request
			for _, name := range e.Object {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: targetPrefix + name}})
			}
			if priority != nil {
				var existing corev1.ConfigMapList
				if err := r.List(ctx, &existing, client.InNamespace(r.Namespace)); err == nil {
					for _, cm := range existing.Items {
						reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cm)})
					}
				}
			}
			if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
				pq.AddWithOpts(priorityqueue.AddOpts{Priority: priority}, reqs...)
				return
			}
			for _, req := range reqs {
				q.Add(req)
			}
		},
	}
}

// Reconcile makes the Target of req match its entry: created, corrected or
// deleted.
func (r *TargetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	name, ok := strings.CutPrefix(req.Name, targetPrefix)
	if req.Namespace != r.Namespace || !ok {
		return ctrl.Result{}, nil
	}
	want, exists := r.System.Get(name)
	var cm corev1.ConfigMap
	err := r.Get(ctx, req.NamespacedName, &cm)
	switch {
	case apierrors.IsNotFound(err) && !exists:
		return ctrl.Result{}, nil
	case apierrors.IsNotFound(err):
		cm = corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name, Labels: map[string]string{managedBy: managerName}},
			Data:       want,
		}
		if err := r.Create(ctx, &cm); apierrors.IsAlreadyExists(err) {
			// Not cached yet (retried), or somebody else's (left alone).
			var live corev1.ConfigMap
			if err := r.APIReader.Get(ctx, req.NamespacedName, &live); err != nil {
				return ctrl.Result{}, err
			}
			if live.Labels[managedBy] == managerName {
				return ctrl.Result{}, err
			}
			return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("ConfigMap %s exists and is not managed by %s", req, managerName))
		} else if err != nil {
			return ctrl.Result{}, fmt.Errorf("creating Target %s: %w", req, err)
		}
		r.Recorder.Eventf(&cm, nil, corev1.EventTypeNormal, "Synced", "Create", "Created from entry %s", name)
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err
	case cm.Labels[managedBy] != managerName:
		return ctrl.Result{}, nil
	case !exists:
		if err := r.Delete(ctx, &cm, client.Preconditions{UID: &cm.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting Target %s: %w", req, err)
		}
		return ctrl.Result{}, nil
	case maps.Equal(cm.Data, want):
		return ctrl.Result{}, nil
	}
	cm.Data = want
	if err := r.Update(ctx, &cm); err != nil {
		return ctrl.Result{}, fmt.Errorf("updating Target %s: %w", req, err)
	}
	r.Recorder.Eventf(&cm, nil, corev1.EventTypeNormal, "Synced", "Update", "Updated from entry %s", name)
	return ctrl.Result{}, nil
}
