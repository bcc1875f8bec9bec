// Command crfoo is the Foo controller of examples/foo written with
// controller-runtime the way its documentation and kubebuilder's scaffold
// teach: a manager, a reconciler set up with the builder, the manager's
// client, cache, event recorder, leader election, probes and metrics. It
// behaves like examples/foo (same flags, Deployment, status, conditions and
// refusals) so that the two can be compared: in lines of code (docs/lines-of-code.md) and
// in the convergence benchmark.
package main

import (
	"flag"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(samplev1alpha1.AddToScheme(scheme))
}

func main() {
	var (
		metricsAddr, probeAddr, pprofAddr, leaseNamespace, leaseID string
		leaderElect, keepManagedFields                             bool
		workers, burst                                             int
		qps                                                        float64
		resync, leaseDuration, renewDeadline, retry                time.Duration
		shutdownTimeout                                            time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz; \"0\" disables them.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "", "Address of Go's runtime profiles at /debug/pprof/; empty or \"0\" disables them.")
	flag.BoolVar(&keepManagedFields, "keep-managed-fields", false, "Keep metadata.managedFields in the informer caches.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader with a Lease so that only one replica reconciles.")
	flag.StringVar(&leaseNamespace, "leader-elect-namespace", "", "Namespace of the leader election Lease.")
	flag.StringVar(&leaseID, "leader-elect-id", "foo-controller.samplecontroller.k8s.io", "Name of the leader election Lease.")
	flag.DurationVar(&leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a non-leader waits after the last renewal before taking over.")
	flag.DurationVar(&renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps retrying a renewal before giving up leadership.")
	flag.DurationVar(&retry, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the Lease.")
	flag.IntVar(&workers, "workers", 2, "Number of Foos reconciled at once.")
	flag.DurationVar(&resync, "resync", 10*time.Minute, "How often the informers replay every object to the controller.")
	flag.Float64Var(&qps, "kube-api-qps", 500, "Requests per second the clients may send to the API server.")
	flag.IntVar(&burst, "kube-api-burst", 1000, "Requests the clients may send in a burst above --kube-api-qps.")
	flag.DurationVar(&shutdownTimeout, "shutdown-timeout", 30*time.Second, "How long in-flight reconciles may run after a stop signal.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setupLog := ctrl.Log.WithName("setup")
	if workers < 1 || resync < 0 {
		setupLog.Error(nil, "--workers must be at least 1 and --resync not negative")
		os.Exit(2)
	}

	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(qps), burst, "crfoo-controller"
	if _, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).ServerResourcesForGroupVersion(samplev1alpha1.SchemeGroupVersion.String()); err != nil {
		setupLog.Error(err, "the API server does not serve Foos; install the Foo CRD with: kubectl apply -f foo/crd/samplecontroller.k8s.io_foos.yaml")
		os.Exit(1)
	}
	cacheOpts := cache.Options{SyncPeriod: &resync}
	if !keepManagedFields {
		cacheOpts.DefaultTransform = cache.TransformStripManagedFields()
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:        probeAddr,
		PprofBindAddress:              pprofAddr,
		LeaderElection:                leaderElect,
		LeaderElectionID:              leaseID,
		LeaderElectionNamespace:       leaseNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		RetryPeriod:                   &retry,
		GracefulShutdownTimeout:       &shutdownTimeout,
		Cache:                         cacheOpts,
	})
	if err != nil {
		setupLog.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	reconciler := &FooReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("foo-controller")}
	if err := reconciler.SetupWithManager(mgr, workers); err != nil {
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
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "problem running the manager")
		os.Exit(1)
	}
}
