package operator_test

import (
	"context"
	"flag"
	"os"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// The documentation's examples; ExampleRun and the tests run the same calls
// on free ports.

func runOperator(ctx context.Context, kubeInformers informers.SharedInformerFactory, ctrl *queue.Controller[cache.ObjectName]) error {
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

var _, _, _ = runOperator, bindFlags, main
