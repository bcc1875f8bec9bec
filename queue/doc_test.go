package queue_test

import (
	appsv1 "k8s.io/api/apps/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
)

// watchDeployments is the example of Watch's documentation; Example runs
// the same call for ConfigMaps.
func watchDeployments(ctrl *queue.Controller[cache.ObjectName], deployments appsinformers.DeploymentInformer) error {
	err := ctrl.Watch(deployments.Informer(), informer.EnqueueHandler[*appsv1.Deployment](ctrl))
	return err
}

var _ = watchDeployments
