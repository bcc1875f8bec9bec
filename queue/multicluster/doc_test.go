package multicluster_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// runCopier is the example of the package documentation.
func runCopier(ctx context.Context, provider multicluster.Provider, reconcileCopy multicluster.ReconcileFunc[corelisters.ConfigMapLister]) error {
	var ctrl *queue.Controller[multicluster.Key]
	fleet, err := multicluster.New("copier", provider, func(ctx context.Context, cl *multicluster.Cluster) (corelisters.ConfigMapLister, error) {
		configMaps := cl.Informers.Core().V1().ConfigMaps()
		_, err := configMaps.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(ctrl)), cache.HandlerOptions{})
		return configMaps.Lister(), err
	})
	if err != nil {
		return err
	}
	if ctrl, err = multicluster.NewController(fleet, "copier", reconcileCopy); err != nil {
		return err
	}
	return operator.Run(ctx, operator.WithControllers(fleet, ctrl))
}

var _ = runCopier
