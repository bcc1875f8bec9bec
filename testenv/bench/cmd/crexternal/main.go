// Command crexternal is examples/external written with controller-runtime:
// one ConfigMap (a Target) per entry of an external system, from the
// system's channel notifications and a periodic full resync at low
// priority, behind leader election, with probes and metrics. It behaves like
// examples/external (same flags and Targets) so that the two can be
// compared in lines of code.
package main

import (
	"flag"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ctrlkit/ctrlkit/examples/external/system"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
}

func main() {
	var (
		metricsAddr, probeAddr, leaseNamespace, leaseID, namespace string
		leaderElect                                                bool
		workers, burst                                             int
		qps                                                        float64
		resync, changeEvery, leaseDuration, renewDeadline, retry   time.Duration
		shutdownTimeout                                            time.Duration
	)
	entries := system.Entries{}
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz; \"0\" disables them.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader with a Lease so that only one replica reconciles.")
	flag.StringVar(&leaseNamespace, "leader-elect-namespace", "", "Namespace of the leader election Lease.")
	flag.StringVar(&leaseID, "leader-elect-id", "external-targets", "Name of the leader election Lease.")
	flag.DurationVar(&leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a non-leader waits after the last renewal before taking over.")
	flag.DurationVar(&renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps retrying a renewal before giving up leadership.")
	flag.DurationVar(&retry, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the Lease.")
	flag.Float64Var(&qps, "kube-api-qps", 50, "Requests per second the clients may send to the API server.")
	flag.IntVar(&burst, "kube-api-burst", 100, "Requests the clients may send in a burst above --kube-api-qps.")
	flag.DurationVar(&shutdownTimeout, "shutdown-timeout", 30*time.Second, "How long in-flight reconciles may run after a stop signal.")
	flag.StringVar(&namespace, "namespace", "default", "Namespace of the Targets.")
	flag.Var(entries, "entry", "An entry of the external system, name=key=value[,key=value...]; repeatable.")
	flag.DurationVar(&changeEvery, "change-every", 0, "Edit a random entry this often (0: never).")
	flag.DurationVar(&resync, "resync", time.Minute, "How often every entry and Target is checked, behind the notifications.")
	flag.IntVar(&workers, "workers", 2, "Number of Targets reconciled at once.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setupLog := ctrl.Log.WithName("setup")

	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(qps), burst, "crexternal"
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
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
		// Only the Targets are cached: one namespace, one label.
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{namespace: {}},
			ByObject:          map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{managedBy: managerName})}},
		},
	})
	if err != nil {
		setupLog.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()
	sys := system.New(entries, 1024)
	if changeEvery > 0 {
		go sys.Churn(ctx, changeEvery)
	}
	r := &TargetReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("external-targets"), System: sys, Namespace: namespace}
	if err := r.SetupWithManager(mgr, workers, resync); err != nil {
		setupLog.Error(err, "unable to create the controller")
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
