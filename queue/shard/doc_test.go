package shard_test

import (
	"context"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// runSharded is the package documentation's example; TestGroup runs the
// same wiring with short timings.
func runSharded(ctx context.Context, kubeClient kubernetes.Interface, factory informers.SharedInformerFactory, reconciler reconcile.Reconciler[cache.ObjectName]) error {
	deployments := factory.Apps().V1().Deployments()
	m, err := shard.New(shard.Config{Client: kubeClient, Namespace: "foo-system", Group: "foo-controller"})
	if err != nil {
		return err
	}
	gate := shard.NewGate(m, shard.ObjectNames(deployments.Informer()))
	ctrl, err := queue.New("deployments", reconciler, queue.WithOwnership(gate))
	if err != nil {
		return err
	}
	return operator.Run(ctx, operator.WithSharding(m), operator.WithInformers(factory), operator.WithControllers(ctrl))
}

var _ = runSharded
