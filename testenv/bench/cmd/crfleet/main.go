// Command crfleet is examples/fleet written with multicluster-runtime the
// way its documentation and examples teach: a multicluster manager over
// controller-runtime's, the kubeconfig provider for the members, and
// controllers built with mcbuilder whose requests name their cluster. It
// copies the ConfigMaps of --namespace labelled fleet.ctrlkit.io/copy=true
// in the management cluster to every member cluster and reports the state
// of each copy on its source, behind leader election or, with --sharded,
// sharing the members among the replicas (multicluster-runtime's sharded
// coordinator), with probes and metrics. It behaves like examples/fleet
// (its own flags, and the common ones the other twins have; same copies,
// states and events) so that the two can be compared in lines of code
// (docs/lines-of-code.md). The members are the Secrets of
// --members-namespace labelled multicluster.ctrlkit.io/kubeconfig=true: the
// provider takes only the value "true", where examples/fleet takes any.
// What multicluster-runtime does not do, copier.go does: it probes the
// members and keeps why one could not be engaged, to report it Unreachable.
package main

import (
	"flag"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded"
)

func main() {
	var (
		o                                               Options
		metricsAddr, probeAddr, leaseNamespace, leaseID string
		leaderElect, shard                              bool
		burst                                           int
		qps                                             float64
		leaseDuration, renewDeadline, retry             time.Duration
		shutdownTimeout                                 time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz; \"0\" disables them.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader with a Lease so that only one replica reconciles.")
	flag.BoolVar(&shard, "sharded", false, "Share the members with the other replicas run with --sharded and the same --leader-elect-id. Excludes --leader-elect.")
	flag.StringVar(&leaseNamespace, "leader-elect-namespace", "", "Namespace of the leader election Lease; with --sharded (where it is needed), of the replicas' and the members' Leases.")
	flag.StringVar(&leaseID, "leader-elect-id", fleetName, "Name of the leader election Lease; with --sharded, the prefix of the members' Leases.")
	flag.DurationVar(&leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a non-leader waits after the last renewal before taking over; with --sharded, how long a member stays a replica's after its last renewal.")
	flag.DurationVar(&renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps retrying a renewal before giving up leadership.")
	flag.DurationVar(&retry, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the Lease; with --sharded, the members' Leases.")
	flag.Float64Var(&qps, "kube-api-qps", 50, "Requests per second the clients may send to the management cluster's API server.")
	flag.IntVar(&burst, "kube-api-burst", 100, "Requests the clients may send in a burst above --kube-api-qps.")
	flag.DurationVar(&shutdownTimeout, "shutdown-timeout", 30*time.Second, "How long in-flight reconciles may run after a stop signal.")
	flag.StringVar(&o.Namespace, "namespace", "default", "Namespace of the ConfigMaps to copy, in the management cluster and in the members.")
	flag.StringVar(&o.MembersNamespace, "members-namespace", "fleet-system", "Namespace of the Secrets of the member clusters' kubeconfigs (labelled "+MemberLabel+"=true).")
	flag.IntVar(&o.Workers, "workers", 4, "Number of copies reconciled at once.")
	flag.DurationVar(&o.ProbeInterval, "probe-interval", 10*time.Second, "How often every member cluster is asked for its version; three failures in a row and it is reported Unreachable.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setupLog := ctrl.Log.WithName("setup")
	switch {
	case o.Workers < 1 || o.ProbeInterval <= 0:
		setupLog.Error(nil, "--workers and --probe-interval must be positive")
		os.Exit(2)
	case shard && (leaderElect || leaseNamespace == ""):
		setupLog.Error(nil, "--sharded excludes --leader-elect and needs --leader-elect-namespace")
		os.Exit(2)
	}

	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(qps), burst, "crfleet"
	var coordinator mcmanager.Coordinator // each member engaged here
	if shard {
		leases, err := client.New(cfg, client.Options{})
		if err != nil {
			setupLog.Error(err, "unable to create the client of the members' Leases")
			os.Exit(1)
		}
		coordinator = sharded.New(leases, ctrl.Log.WithName("sharded-coordinator"),
			sharded.WithShardLease(leaseNamespace, leaseID), sharded.WithLeaseTimings(leaseDuration, retry, retry))
	}
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
	}, coordinator)
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
