package widget

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=delete

// ExpiresAt is the annotation (a time in RFC 3339) at which the expiry
// controller deletes a ConfigMap.
const ExpiresAt = "example.com/expires-at"

// NewExpiryController returns a controller that deletes every ConfigMap
// whose ExpiresAt time has come, by clk, waiting for it with RequeueAfter.
// Give the controller the same clock with queue.WithClock, so that a test
// with a fake clock runs it when the clock reaches the time.
func NewExpiryController(kube kubernetes.Interface, configMaps coreinformers.TypedConfigMapInformer, clk clock.PassiveClock, opts ...queue.Option) (*queue.Controller[cache.ObjectName], error) {
	lister := configMaps.Lister()
	ctrl, err := queue.New("expiry", reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		cm, err := lister.ConfigMaps(key.Namespace).Get(key.Name)
		if err != nil || cm.DeletionTimestamp != nil {
			return reconcile.Result{}, ignoreNotFound(err)
		}
		at, err := time.Parse(time.RFC3339, cm.Annotations[ExpiresAt])
		if err != nil {
			return reconcile.Result{}, nil // no expiry, or one that does not parse: kept
		}
		if left := at.Sub(clk.Now()); left > 0 {
			return reconcile.Result{RequeueAfter: left}, nil
		}
		uid := cm.UID // this ConfigMap, not one created later under its name
		err = kube.CoreV1().ConfigMaps(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		return reconcile.Result{}, ignoreNotFound(err)
	}), opts...)
	if err != nil {
		return nil, err
	}
	return ctrl, ctrl.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl)))
}

// ignoreNotFound returns err, but nil for a NotFound: a ConfigMap that is gone
// needs nothing more.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
