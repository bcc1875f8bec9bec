// Command external runs an operator whose desired state lives outside the
// cluster: it keeps one ConfigMap (a "Target") per entry of an external
// system, which pushes change notifications on a channel, with a periodic
// full resync at low priority behind them. The external system is simulated
// in-process; --entry fills it and --change-every edits it.
//
//	go run ./examples/external --kubeconfig ~/.kube/config --entry web=color=blue --change-every 10s
//
// See README.md beside this file.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/events"
	"github.com/ctrlkit/ctrlkit/examples/external/system"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// The permissions the operator needs, all in its own namespace, generated
// into deploy/role.yaml (make generate): the ConfigMaps it keeps, events,
// and the Lease of leader election.
//
// +kubebuilder:rbac:groups="",namespace=external-system,resources=configmaps,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",namespace=external-system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=external-system,resources=leases,verbs=get;create;update

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// options are the command-line flags.
type options struct {
	operator.Flags
	namespace   string
	entries     system.Entries
	changeEvery time.Duration
	resync      time.Duration
	workers     int
}

// bindFlags registers the flags on fs.
func bindFlags(fs *flag.FlagSet) *options {
	o := &options{Flags: operator.Flags{LeaderElectID: "external-targets", MetricsAddr: ":8080", ProbeAddr: ":8081"},
		entries: system.Entries{}}
	o.Bind(fs)
	fs.StringVar(&o.namespace, "namespace", "default", "Namespace of the Targets.")
	fs.Var(o.entries, "entry", "An entry of the external system, name=key=value[,key=value...]; repeatable.")
	fs.DurationVar(&o.changeEvery, "change-every", 0, "Edit a random entry this often, as a user of the external system would (0: never).")
	fs.DurationVar(&o.resync, "resync", time.Minute, "How often every entry and Target is checked, behind the notifications.")
	fs.IntVar(&o.workers, "workers", 2, "Number of Targets reconciled at once.")
	return o
}

// run runs the operator with args until SIGINT or SIGTERM and returns the
// process exit code.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("external", flag.ContinueOnError)
	o := bindFlags(fs)
	return o.Main(fs, args, stderr, o.runOperator, func() error {
		if o.workers < 1 || o.resync <= 0 {
			return fmt.Errorf("--workers and --resync must be positive, got %d and %s", o.workers, o.resync)
		}
		return nil
	})
}

// runOperator connects to the cluster and runs the Target controller with
// its informer, leader election and endpoints.
func (o *options) runOperator(ctx context.Context) error {
	cfg, err := o.RESTConfig("ctrlkit-external")
	if err != nil {
		return err
	}
	if err := operator.CheckServed(cfg, corev1.SchemeGroupVersion); err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	eventRecorder, err := events.NewRecorder(ctx, kube, "external-targets")
	if err != nil {
		return err
	}
	sys := system.New(o.entries, 1024)
	if o.changeEvery > 0 {
		go sys.Churn(ctx, o.changeEvery)
	}
	// Only the Targets are cached: one namespace, one label.
	factory := operator.Informers(&o.Flags, func(transform cache.TransformFunc) informers.SharedInformerFactory {
		return informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(o.namespace), informers.WithTransform(transform),
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = managedSelector.String() }))
	})
	ctrl, err := newController(sys, kube, factory.Core().V1().ConfigMaps(), eventRecorder, o.namespace, o.resync,
		append(o.ControllerOptions(), queue.WithWorkers(o.workers))...)
	if err != nil {
		return err
	}
	return operator.Run(ctx, append(o.Options(kube), operator.WithControllers(ctrl))...)
}
