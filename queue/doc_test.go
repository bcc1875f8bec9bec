package queue_test

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/owner"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// watchDeployments is the example of Watch's documentation; Example runs
// the same call for ConfigMaps.
func watchDeployments(ctrl *queue.Controller[cache.ObjectName], deployments appsinformers.TypedDeploymentInformer) error {
	err := ctrl.Watch(queue.On(deployments.TypedInformer(), informer.EnqueueHandler[*appsv1.Deployment](ctrl)))
	return err
}

var _ = watchDeployments

// watchFoos is the example of Controller.Watch's documentation.
func watchFoos(ctrl *queue.Controller[cache.ObjectName], foos fooinformers.TypedFooInformer, deployments appsinformers.TypedDeploymentInformer) error {
	fooKind := v1alpha1.Kind("Foo")
	err := ctrl.Watch(
		queue.On(foos.TypedInformer(), informer.EnqueueHandler[*v1alpha1.Foo](ctrl)),
		queue.On(deployments.TypedInformer(), owner.EnqueueOwner[*appsv1.Deployment](fooKind, ctrl)),
	)
	return err
}

// rateLimited is the example of WithRateLimiter's documentation.
func rateLimited(r reconcile.Reconciler[string]) (*queue.Controller[string], error) {
	opt :=
		queue.WithRateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[any](time.Second, time.Minute))
	return queue.New("limited", r, opt)
}

// feedKeys is the example of Feed's documentation.
func feedKeys(ctrl *queue.Controller[string], keys <-chan string) error {
	err := ctrl.Watch(queue.Feed(func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case key := <-keys:
				ctrl.Add(key)
			}
		}
	}))
	return err
}

// periodicKeys is the example of Periodic's documentation.
func periodicKeys(ctrl *queue.Controller[string], listAll func(ctx context.Context) ([]string, error)) error {
	err := ctrl.Watch(queue.Periodic(ctrl, 10*time.Minute, listAll, queue.AtStart(), queue.LowPriority()))
	return err
}

var (
	_ = watchFoos
	_ = rateLimited
	_ = feedKeys
	_ = periodicKeys
)
