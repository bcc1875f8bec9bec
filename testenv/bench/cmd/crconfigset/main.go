// Command crconfigset is examples/configset written with
// multicluster-runtime the way its documentation and examples teach: a
// multicluster manager over controller-runtime's, the kubeconfig provider
// for the members, and one controller built with mcbuilder on the
// ConfigSets of the management cluster that also watches the members'
// ConfigMaps. It applies every ConfigSet to the members as a ConfigMap and
// writes where it stands in each into its status, behind leader election,
// with probes and metrics. It behaves like examples/configset (its own
// flags, and the common ones the other twins have; same ConfigMaps, status
// and events) so that the two can be compared in lines of code
// (docs/lines-of-code.md). The members are the Secrets of
// --members-namespace labelled --members-label=true: the provider takes a
// label whose value is "true", where examples/configset takes a selector.
// multicluster-runtime tells no controller that a member joined, left or
// stopped answering: every ConfigSet is reconciled again every few seconds.
package main

import (
	"flag"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func main() {
	var (
		o                                               Options
		metricsAddr, probeAddr, leaseNamespace, leaseID string
		leaderElect                                     bool
		burst                                           int
		qps                                             float64
		leaseDuration, renewDeadline, retry             time.Duration
		shutdownTimeout                                 time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz; \"0\" disables them.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader with a Lease so that only one replica reconciles.")
	flag.StringVar(&leaseNamespace, "leader-elect-namespace", "", "Namespace of the leader election Lease.")
	flag.StringVar(&leaseID, "leader-elect-id", fleetName, "Name of the leader election Lease.")
	flag.DurationVar(&leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a non-leader waits after the last renewal before taking over.")
	flag.DurationVar(&renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps retrying a renewal before giving up leadership.")
	flag.DurationVar(&retry, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the Lease.")
	flag.Float64Var(&qps, "kube-api-qps", 50, "Requests per second the clients may send to the management cluster's API server.")
	flag.IntVar(&burst, "kube-api-burst", 100, "Requests the clients may send in a burst above --kube-api-qps.")
	flag.DurationVar(&shutdownTimeout, "shutdown-timeout", 30*time.Second, "How long in-flight reconciles may run after a stop signal.")
	flag.StringVar(&o.MembersNamespace, "members-namespace", "fleet-system", "Namespace of the Secrets of the member clusters' kubeconfigs.")
	flag.StringVar(&o.MembersLabel, "members-label", "multicluster.ctrlkit.io/kubeconfig", "Label (=true) of the member clusters' Secrets.")
	flag.StringVar(&o.MembersDataKey, "members-data-key", "kubeconfig", "Key of the kubeconfig in a member cluster's Secret.")
	flag.IntVar(&o.Workers, "workers", 4, "Number of ConfigSets reconciled at once.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setupLog := ctrl.Log.WithName("setup")
	if o.Workers < 1 {
		setupLog.Error(nil, "--workers must be positive")
		os.Exit(2)
	}

	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(qps), burst, "crconfigset"
	ctx := ctrl.SetupSignalHandler()
	mgr, err := NewManager(ctx, cfg, o, ctrl.Options{
		Metrics:                       metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:        probeAddr,
		LeaderElection:                leaderElect,
		LeaderElectionID:              leaseID,
		LeaderElectionNamespace:       leaseNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		RetryPeriod:                   &retry,
		GracefulShutdownTimeout:       &shutdownTimeout,
	})
	if err != nil {
		setupLog.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up the ready check")
		os.Exit(1)
	}
	if err := mgr.Start(ctx); err != nil {
		setupLog.Error(err, "problem running the manager")
		os.Exit(1)
	}
}
