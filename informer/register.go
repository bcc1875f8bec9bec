package informer

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Register adds handler to inf, with the logger from ctx for the informer's
// own log messages about this handler, and returns the registration's
// HasSynced as a cache.InformerSynced together with the registration (for
// inf.RemoveEventHandler).
//
// The returned function reports true once inf has completed its initial
// list and every object of that list has been delivered to handler. That is
// a stronger guarantee than inf.HasSynced, which only says the informer's
// cache is filled: a worker loop that waits for it before starting knows
// that handler has enqueued every pre-existing object. Pass it to the
// worker loop's list of sync functions:
//
//	synced, _, err := informer.Register(ctx, inf, informer.EnqueueHandler[*appsv1.Deployment](ctrl.Add))
//	if err != nil {
//		return err
//	}
//	if err := ctrl.WaitForSync(synced); err != nil {
//		return err
//	}
func Register(ctx context.Context, inf cache.SharedInformer, handler cache.ResourceEventHandler) (cache.InformerSynced, cache.ResourceEventHandlerRegistration, error) {
	logger := klog.FromContext(ctx)
	reg, err := inf.AddEventHandlerWithOptions(handler, cache.HandlerOptions{Logger: &logger})
	if err != nil {
		return nil, nil, fmt.Errorf("informer: add event handler: %w", err)
	}
	return reg.HasSynced, reg, nil
}
