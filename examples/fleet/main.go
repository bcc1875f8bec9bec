// Command fleet runs an operator that copies ConfigMaps of a management
// cluster to every member cluster of a fleet, and reports the state of
// each copy on its source. The members are read from kubeconfigs in
// Secrets of the management cluster (package
// queue/multicluster/kubeconfig); with --sharded, the replicas share the
// members.
//
//	go run ./examples/fleet --kubeconfig ~/.kube/config --namespace default --members-namespace fleet-system
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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// The permissions the operator needs in the management cluster, generated
// into deploy/role.yaml (make generate): the sources (in any namespace, as
// --namespace says) and their state annotations, the members' kubeconfig
// Secrets, events on them, and the Leases of leader election or sharding.
// In the members, the operator acts with the credentials of their
// kubeconfigs.
//
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",namespace=fleet-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=fleet-system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=fleet-system,resources=leases,verbs=get;list;watch;create;update;delete

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// options are the command-line flags.
type options struct {
	operator.Flags
	namespace        string
	membersNamespace string
	workers          int
	probeInterval    time.Duration
}

// bindFlags registers the flags on fs.
func bindFlags(fs *flag.FlagSet) *options {
	o := &options{Flags: operator.Flags{LeaderElectID: fleetName, MetricsAddr: ":8080", ProbeAddr: ":8081"}}
	o.Bind(fs)
	fs.StringVar(&o.namespace, "namespace", "default", "Namespace of the ConfigMaps to copy, in the management cluster and in the members.")
	fs.StringVar(&o.membersNamespace, "members-namespace", "fleet-system", "Namespace of the Secrets of the member clusters' kubeconfigs (labelled "+kubeconfig.Label+").")
	fs.IntVar(&o.workers, "workers", 4, "Number of copies reconciled at once.")
	fs.DurationVar(&o.probeInterval, "probe-interval", multicluster.DefaultProbeInterval, "How often every member cluster is asked for its version; three failures in a row and it is engaged again.")
	return o
}

// run runs the operator with args until SIGINT or SIGTERM and returns the
// process exit code.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	o := bindFlags(fs)
	return o.Main(fs, args, stderr, o.runOperator, func() error {
		if o.workers < 1 || o.probeInterval <= 0 {
			return fmt.Errorf("--workers and --probe-interval must be positive, got %d and %s", o.workers, o.probeInterval)
		}
		return nil
	})
}

// runOperator connects to the management cluster and runs the fleet and
// its two controllers.
func (o *options) runOperator(ctx context.Context) error {
	cfg, err := o.RESTConfig("ctrlkit-fleet")
	if err != nil {
		return err
	}
	mgmt, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	provider, err := kubeconfig.New(kubeconfig.Config{Client: mgmt, Namespace: o.membersNamespace, Component: fleetName})
	if err != nil {
		return err
	}
	// The members see this replica by its user agent.
	userAgent := "ctrlkit-fleet"
	if o.Identity != "" {
		userAgent += "/" + o.Identity
	}
	fleetOpts := []multicluster.Option{
		multicluster.WithMetrics(o.Metrics()),
		multicluster.WithProbeInterval(o.probeInterval),
		multicluster.WithClients(func(_ context.Context, _ string, member *rest.Config) (kubernetes.Interface, error) {
			member = rest.CopyConfig(member)
			member.UserAgent = userAgent
			return kubernetes.NewForConfig(member)
		}),
	}
	m, err := o.Membership(mgmt)
	if err != nil {
		return err
	}
	if m != nil {
		fleetOpts = append(fleetOpts, multicluster.WithSharding(m))
	}
	// Only the sources are cached in the management cluster.
	factory := operator.Informers(&o.Flags, func(transform cache.TransformFunc) informers.SharedInformerFactory {
		return informers.NewSharedInformerFactoryWithOptions(mgmt, 0, informers.WithNamespace(o.namespace), informers.WithTransform(transform),
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = sourceSelector.String() }))
	})
	c, err := newCopier(mgmt, factory.Core().V1().ConfigMaps(), provider, fleetOpts, append(o.ControllerOptions(), queue.WithWorkers(o.workers))...)
	if err != nil {
		return err
	}
	return operator.Run(ctx, append(o.Options(mgmt), operator.WithControllers(c.fleet, c.copies, c.status))...)
}
