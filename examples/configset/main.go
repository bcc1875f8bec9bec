// Command configset runs an operator that applies the ConfigSets of a
// management cluster to every member cluster of a fleet, as ConfigMaps of
// the same namespace and name, and reports in each ConfigSet's status where
// it stands in every member, with one Ready condition over all. The
// members are read from kubeconfigs in Secrets of the management cluster
// (package queue/multicluster/kubeconfig).
//
//	go run ./examples/configset --kubeconfig ~/.kube/config --members-namespace configset-system
//
// See README.md beside this file.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/events"
	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/configset/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/examples/configset/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// The permissions the operator needs in the management cluster, generated
// into deploy/role.yaml (make generate): the ConfigSets, patched for the
// finalizer and their status updated, events about them, the members'
// kubeconfig Secrets and the leader election Lease. In the members, the
// operator acts with the credentials of their kubeconfigs.
//
// +kubebuilder:rbac:groups=fleet.ctrlkit.io,resources=configsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=fleet.ctrlkit.io,resources=configsets/status,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",namespace=configset-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=configset-system,resources=leases,verbs=get;list;watch;create;update

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// options are the command-line flags.
type options struct {
	operator.Flags
	membersNamespace, membersSelector, membersDataKey string
	workers                                           int
}

// bindFlags registers the flags on fs.
func bindFlags(fs *flag.FlagSet) *options {
	o := &options{Flags: operator.Flags{LeaderElectID: fleetName, MetricsAddr: ":8080", ProbeAddr: ":8081"}}
	o.Bind(fs)
	fs.StringVar(&o.membersNamespace, "members-namespace", "configset-system", "Namespace of the Secrets of the member clusters' kubeconfigs.")
	fs.StringVar(&o.membersSelector, "members-selector", kubeconfig.Label, "Label selector of the member clusters' Secrets.")
	fs.StringVar(&o.membersDataKey, "members-data-key", kubeconfig.DataKey, "Key of the kubeconfig in a member cluster's Secret.")
	fs.IntVar(&o.workers, "workers", 4, "Number of ConfigSets reconciled at once.")
	return o
}

// run runs the operator with args until SIGINT or SIGTERM and returns the
// process exit code.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("configset", flag.ContinueOnError)
	o := bindFlags(fs)
	return o.Main(fs, args, stderr, o.runOperator, func() error {
		if _, err := labels.Parse(o.membersSelector); err != nil {
			return fmt.Errorf("--members-selector: %w", err)
		}
		if o.workers < 1 {
			return fmt.Errorf("--workers must be positive, got %d", o.workers)
		}
		return nil
	})
}

// runOperator connects to the management cluster and runs the fleet and
// the ConfigSet controller.
func (o *options) runOperator(ctx context.Context) error {
	cfg, err := o.RESTConfig("ctrlkit-configset")
	if err != nil {
		return err
	}
	if err := operator.CheckServed(cfg, fleetv1alpha1.SchemeGroupVersion); err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	selector, _ := labels.Parse(o.membersSelector) // checked by run
	provider, err := kubeconfig.New(kubeconfig.Config{Client: kube, Namespace: o.membersNamespace, Selector: selector, DataKey: o.membersDataKey, Component: fleetName})
	if err != nil {
		return err
	}
	recorder, err := events.NewRecorder(ctx, kube, fleetName, events.WithAddToScheme(fleetv1alpha1.AddToScheme))
	if err != nil {
		return err
	}
	factory := operator.Informers(&o.Flags, func(transform cache.TransformFunc) externalversions.SharedInformerFactory {
		return externalversions.NewSharedInformerFactoryWithOptions(client, 0, externalversions.WithTransform(transform))
	})
	c, err := newConfigSets(client, factory.Fleet().V1alpha1().ConfigSets(), recorder, provider,
		[]multicluster.Option{multicluster.WithMetrics(o.Metrics())},
		append(o.ControllerOptions(), queue.WithWorkers(o.workers))...)
	if err != nil {
		return err
	}
	return operator.Run(ctx, append(o.Options(kube), operator.WithControllers(c.fleet, c.hub))...)
}
