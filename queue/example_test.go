package queue_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// A controller of ConfigMaps: the handler it watches with enqueues the key
// of every ConfigMap, and Run reconciles them until its context ends.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}})
	factory := informers.NewSharedInformerFactory(client, 0)
	defer factory.Shutdown()
	configMaps := factory.Core().V1().ConfigMaps()

	done := make(chan struct{})
	reconciler := reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		fmt.Println("reconciling", key)
		close(done)
		return reconcile.Result{}, nil
	})

	stopped := make(chan error)
	go func() { stopped <- runConfigMaps(ctx, factory, configMaps, reconciler) }()
	<-done
	cancel()
	fmt.Println("stopped:", <-stopped)
	// Output:
	// reconciling default/settings
	// stopped: <nil>
}

// runConfigMaps wires the controller of Example and runs it.
func runConfigMaps(ctx context.Context, factory informers.SharedInformerFactory, configMaps coreinformers.TypedConfigMapInformer,
	reconciler reconcile.Reconciler[cache.ObjectName]) error {
	ctrl, err := queue.New("configmaps", reconciler, queue.WithWorkers(2))
	if err != nil {
		return err
	}
	if err := ctrl.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	return ctrl.Run(ctx) // blocks until ctx is cancelled and shutdown is complete
}

// Sources feed a controller from outside its informers: here a channel of
// notifications, each naming the keys it concerns.
func ExampleChannel() {
	type notification struct{ changed []string }
	notifications := make(chan notification)
	done := make(chan struct{})
	r := reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		fmt.Println("reconciling", key)
		if key == "last" {
			close(done)
		}
		return reconcile.Result{}, nil
	})
	ctrl, err := queue.New("example", r)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = ctrl.Watch(queue.Channel(ctrl, notifications, func(n notification) []string { return n.changed }))
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- ctrl.Run(ctx) }()

	notifications <- notification{changed: []string{"first"}}
	notifications <- notification{changed: []string{"last"}}
	<-done
	cancel()
	fmt.Println("stopped:", <-stopped)
	// Output:
	// reconciling first
	// reconciling last
	// stopped: <nil>
}

// A traced controller: every reconcile is a span of tp, linked to what set
// it off (here, a key added by hand: no trigger).
func ExampleWithTracing() {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	ctx, cancel := context.WithCancel(context.Background())
	ctrl, err := queue.New("configmaps", reconcile.Func[string](func(context.Context, string) (reconcile.Result, error) {
		cancel()
		return reconcile.Result{}, nil
	}), queue.WithTracing(tp))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctrl.Add("default/settings")
	if err := ctrl.Run(ctx); err != nil {
		fmt.Println(err)
	}
	for _, s := range exporter.GetSpans() {
		fmt.Println(s.Name)
	}
	_ = tp.Shutdown(context.Background())
	// Output: Reconcile configmaps
}
