package foo_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue"
)

// The controller over fake clientsets: a Foo gets its Deployment. Against a
// cluster, pass real clientsets built from a rest.Config instead.
func ExampleNewController() {
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	kubeClient := kubefake.NewClientset()
	fooClient := foofake.NewClientset(&samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "example-foo", UID: "uid-1"},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: "example-foo", Replicas: ptr.To[int32](2)},
	})
	kubeInformers := kubeinformers.NewSharedInformerFactory(kubeClient, 10*time.Minute)
	fooInformers := fooinformers.NewSharedInformerFactory(fooClient, 10*time.Minute)

	ctrl, err := foo.NewController(ctx, kubeClient, fooClient,
		kubeInformers.Apps().V1().Deployments(), fooInformers.Samplecontroller().V1alpha1().Foos(),
		eventstest.NewRecorder(), queue.WithWorkers(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	kubeInformers.Start(ctx.Done())
	fooInformers.Start(ctx.Done())
	stopped := make(chan error)
	go func() { stopped <- ctrl.Run(ctx) }()

	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := kubeClient.AppsV1().Deployments("default").Get(ctx, "example-foo", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		fmt.Printf("deployment %s: %d replicas, controlled by %s\n", d.Name, *d.Spec.Replicas, metav1.GetControllerOf(d).Name)
		return true, nil
	})
	if err != nil {
		fmt.Println(err)
	}
	cancel()
	fmt.Println("stopped:", <-stopped)
	kubeInformers.Shutdown()
	fooInformers.Shutdown()
	// Output:
	// deployment example-foo: 2 replicas, controlled by example-foo
	// stopped: <nil>
}
