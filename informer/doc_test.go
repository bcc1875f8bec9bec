package informer_test

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
)

// The code blocks of the documentation, compiled.

// trimDeployments is the package documentation's example of Trim.
func trimDeployments(factory informers.SharedInformerFactory) error {
	err := informer.Trim[*appsv1.Deployment](factory.Apps().V1().Deployments().Informer(),
		"spec.replicas", "spec.template.spec.containers.image", "status.availableReplicas")
	return err
}

// watchChangedFoos is the package documentation's example.
func watchChangedFoos(ctrl *queue.Controller[cache.ObjectName], foos fooinformers.TypedFooInformer) error {
	err := ctrl.Watch(queue.On(foos.TypedInformer(), informer.EnqueueHandler[*v1alpha1.Foo](ctrl,
		informer.WithPredicates(informer.GenerationChanged()))))
	return err
}

// watchFoos is the example of EnqueueHandler's documentation.
func watchFoos(ctrl *queue.Controller[cache.ObjectName], foos fooinformers.TypedFooInformer) error {
	err := ctrl.Watch(queue.On(foos.TypedInformer(), informer.EnqueueHandler[*v1alpha1.Foo](ctrl)))
	return err
}

// watchWantedDeployments is the example of EnqueueByIndex's documentation:
// byWanted files Foos under the namespace/name of the Deployment they want.
func watchWantedDeployments(ctrl *queue.Controller[cache.ObjectName], deployments appsinformers.TypedDeploymentInformer,
	byWanted *informer.Index[*v1alpha1.Foo]) error {
	err := ctrl.Watch(queue.On(deployments.TypedInformer(),
		informer.EnqueueByIndex(byWanted, informer.KeyOf[*appsv1.Deployment], ctrl)))
	return err
}

// watchSettings is the example of EnqueueTargets' documentation:
// settingsOf tells whether a Foo reads a ConfigMap of settings.
func watchSettings(ctrl *queue.Controller[cache.ObjectName], configMaps coreinformers.TypedConfigMapInformer,
	foos fooinformers.TypedFooInformer, settingsOf func(cm *corev1.ConfigMap, foo *v1alpha1.Foo) bool) error {
	err := ctrl.Watch(queue.On(configMaps.TypedInformer(),
		informer.EnqueueTargets(foos.TypedInformer(), settingsOf, ctrl,
			informer.WithPredicates(informer.LabelPresent("foo.example.com/settings")))))
	return err
}

var _, _, _, _, _ = watchChangedFoos, watchFoos, watchWantedDeployments, watchSettings, trimDeployments
