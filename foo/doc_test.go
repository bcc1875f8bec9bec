package foo_test

import (
	"context"
	"time"

	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/ctrlkit/ctrlkit/foo"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue"
)

// embed is the package documentation's example; ExampleNewController runs
// the same wiring.
func embed(ctx context.Context, kubeClient kubernetes.Interface, fooClient fooclientset.Interface, recorder record.EventRecorder) error {
	kubeInformers := kubeinformers.NewSharedInformerFactory(kubeClient, 10*time.Minute)
	fooInformers := fooinformers.NewSharedInformerFactory(fooClient, 10*time.Minute)
	ctrl, err := foo.NewController(ctx, kubeClient, fooClient,
		kubeInformers.Apps().V1().Deployments(), fooInformers.Samplecontroller().V1alpha1().Foos(),
		recorder, queue.WithWorkers(2))
	if err != nil {
		return err
	}
	kubeInformers.Start(ctx.Done())
	fooInformers.Start(ctx.Done())
	return ctrl.Run(ctx)
}

var _ = embed
