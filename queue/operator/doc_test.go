package operator_test

import (
	"context"
	"flag"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// The documentation's examples; ExampleRun and the tests run the same calls
// on free ports.

func runOperator(ctx context.Context, kubeInformers kubeinformers.SharedInformerFactory, ctrl *queue.Controller[cache.ObjectName]) error {
	return operator.Run(ctx,
		operator.WithInformers(kubeInformers),
		operator.WithControllers(ctrl),
		operator.WithProbes(":8081"),
	)
}

func bindFlags() *operator.Flags {
	flags := operator.Flags{LeaderElectID: "foo-controller", MetricsAddr: ":8080", ProbeAddr: ":8081"}
	flags.Bind(flag.CommandLine)
	return &flags
}

func main(flags *operator.Flags, fs *flag.FlagSet, run func(context.Context) error) {
	os.Exit(flags.Main(fs, os.Args[1:], os.Stderr, run, nil))
}

func runWithFlags(ctx context.Context, flags operator.Flags, kubeClient kubernetes.Interface, reconciler reconcile.Reconciler[cache.ObjectName]) error {
	kubeInformers := operator.Informers(&flags, func(transform cache.TransformFunc) kubeinformers.SharedInformerFactory {
		return kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0, kubeinformers.WithTransform(transform))
	})
	ctrl, err := queue.New("configmaps", reconciler, flags.ControllerOptions()...)
	if err != nil {
		return err
	}
	configMaps := kubeInformers.Core().V1().ConfigMaps()
	if err := ctrl.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))); err != nil {
		return err
	}
	return operator.Run(ctx, append(flags.Options(kubeClient), operator.WithControllers(ctrl))...)
}

var _, _, _, _ = runOperator, bindFlags, main, runWithFlags

// kubeInformersOf is the example of Informers' documentation.
func kubeInformersOf(flags operator.Flags, kubeClient kubernetes.Interface, resync time.Duration) kubeinformers.SharedInformerFactory {
	kubeInformers := operator.Informers(&flags, func(transform cache.TransformFunc) kubeinformers.SharedInformerFactory {
		return kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, resync, kubeinformers.WithTransform(transform))
	})
	return kubeInformers
}

var _ = kubeInformersOf
