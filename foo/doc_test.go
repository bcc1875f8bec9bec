package foo_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
	"github.com/ctrlkit/ctrlkit/foo"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/metrics/metricstest"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// embed is the package documentation's example, in the function a binary
// built on package queue/operator runs once its flags are parsed (see
// examples/foo). TestEmbed runs it; ExampleNewController runs the
// controller without package operator.
func embed(ctx context.Context, flags *operator.Flags, kubeClient kubernetes.Interface, fooClient fooclientset.Interface, recorder record.EventRecorder) error {
	kubeInformers := operator.Informers(flags, func(transform cache.TransformFunc) kubeinformers.SharedInformerFactory {
		return kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 10*time.Minute, kubeinformers.WithTransform(transform))
	})
	fooInformers := operator.Informers(flags, func(transform cache.TransformFunc) fooinformers.SharedInformerFactory {
		return fooinformers.NewSharedInformerFactoryWithOptions(fooClient, 10*time.Minute, fooinformers.WithTransform(transform))
	})
	foos := fooInformers.Samplecontroller().V1alpha1().Foos()
	ctrl, err := foo.NewController(ctx, kubeClient, fooClient, kubeInformers.Apps().V1().Deployments(), foos,
		recorder, append(flags.ControllerOptions(), queue.WithWorkers(2))...)
	if err != nil {
		return err
	}
	if err := operator.Shard(flags, ctrl.Controller, kubeClient, shard.ObjectNames(foos.TypedInformer())); err != nil {
		return err
	}
	return operator.Run(ctx, append(flags.Options(kubeClient), operator.WithControllers(ctrl))...)
}

// The package documentation's example runs the controller under package
// operator: Run starts the informer factories the flags made, the Foo gets
// its Deployment, the reconciles are counted on the registry the flags
// serve at --metrics-bind-address, and cancelling the context stops
// everything.
func TestEmbed(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(reconciletest.Context(t))
	defer cancel()
	kube := kubefake.NewClientset()
	foos := foofake.NewClientset(newFoo("example-foo", "web", ptr.To[int32](2)))
	// Metrics on a free loopback port; no probes.
	flags := &operator.Flags{MetricsAddr: "127.0.0.1:0", ProbeAddr: "0"}
	registry := flags.Registry() // made here: a Flags is not safe for concurrent use
	done := make(chan error, 1)
	go func() { done <- embed(ctx, flags, kube, foos, eventstest.NewRecorder()) }()

	require.Eventually(t, func() bool {
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && metav1.GetControllerOf(d) != nil && metav1.GetControllerOf(d).Name == "example-foo"
	}, eventually, time.Millisecond, "the Foo gets its Deployment")
	success := map[string]string{"controller": foo.ControllerName, "result": "success"}
	require.Eventually(t, func() bool {
		n, err := metricstest.Lookup(registry, "controller_runtime_reconcile_total", success)
		return err == nil && n >= 1
	}, eventually, time.Millisecond, "the flags' metrics count the controller's reconciles")

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err, "a cancelled operator stops without error")
	case <-time.After(eventually):
		t.Fatal("the operator did not stop")
	}
}
