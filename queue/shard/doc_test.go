package shard_test

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// runSharded is the package documentation's example; TestGroup runs its
// Gates and TestInformerCachesOwnedKeys its informers, with short timings.
func runSharded(ctx context.Context, kubeClient kubernetes.Interface, factory informers.SharedInformerFactory, reconciler reconcile.Reconciler[cache.ObjectName]) error {
	m, err := shard.New(shard.Config{Client: kubeClient, Namespace: "foo-system", Group: "foo-controller"})
	if err != nil {
		return err
	}
	// The factory's Deployment informer caches only this replica's Deployments.
	api := kubeClient.AppsV1().Deployments("")
	if err := shard.Informer[*appsv1.Deployment](m, factory.InformerFor, api.List, api.Watch, shard.ByName); err != nil {
		return err
	}
	deployments := factory.Apps().V1().Deployments()
	ctrl, err := queue.New("deployments", reconciler)
	if err != nil {
		return err
	}
	if err := ctrl.Watch(queue.On(deployments.TypedInformer(), informer.EnqueueHandler[*appsv1.Deployment](ctrl))); err != nil {
		return err
	}
	if err := ctrl.Restrict(shard.NewGate(m, shard.ObjectNames(deployments.TypedInformer()))); err != nil {
		return err
	}
	return operator.Run(ctx, operator.WithSharding(m), operator.WithInformers(factory), operator.WithControllers(ctrl))
}

var _ = runSharded

// configMapOf files a Foo under the ConfigMap its annotation names.
func configMapOf(obj any) ([]string, error) {
	foo, ok := obj.(*samplev1alpha1.Foo)
	if !ok || foo.Annotations["example.com/config"] == "" {
		return nil, nil
	}
	return []string{foo.Namespace + "/" + foo.Annotations["example.com/config"]}, nil
}

// referencedConfigMaps is the example of "Objects the primaries refer
// to"; TestReferencedCachesWhatOwnedKeysReferTo runs the same wiring.
func referencedConfigMaps(m *shard.Membership, kubeClient kubernetes.Interface, kubeFactory informers.SharedInformerFactory, factory fooinformers.SharedInformerFactory) error {
	fooInformer := factory.Samplecontroller().V1alpha1().Foos().Informer()
	if err := fooInformer.AddIndexers(cache.Indexers{"configMap": configMapOf}); err != nil {
		return err
	}
	api := kubeClient.CoreV1().ConfigMaps("")
	if err := shard.Referenced[*corev1.ConfigMap](m, kubeFactory.InformerFor, api.List, api.Watch, fooInformer, "configMap"); err != nil {
		return err
	}
	return nil
}

var _ = referencedConfigMaps
