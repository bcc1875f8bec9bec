package informer_test

import (
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
)

// watchChangedFoos is the package documentation's example.
func watchChangedFoos(ctrl *queue.Controller[cache.ObjectName], fooInformer fooinformers.FooInformer) error {
	err := ctrl.Watch(fooInformer.Informer(), informer.EnqueueHandler[*v1alpha1.Foo](ctrl,
		informer.WithPredicates(informer.GenerationChanged())))
	return err
}

// watchFoos is the example of EnqueueHandler's documentation.
func watchFoos(ctrl *queue.Controller[cache.ObjectName], fooInformer fooinformers.FooInformer) error {
	err := ctrl.Watch(fooInformer.Informer(), informer.EnqueueHandler[*v1alpha1.Foo](ctrl))
	return err
}

var _, _ = watchChangedFoos, watchFoos
