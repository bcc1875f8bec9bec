// Command crbucket is examples/bucket written with controller-runtime: an
// operator of cluster-scoped Buckets, each declaring a bucket in a storage
// service outside the cluster, which it creates, keeps as specified and
// deletes behind a finalizer, woken by the Buckets, by the service's change
// notifications and by a periodic check, behind leader election, with probes
// and metrics. Buckets are storage.ctrlkit.io/v1, and a Bucket whose
// deletion policy is Retain keeps its bucket. The same manager serves the
// Bucket API's webhooks (webhook.go): conversion from and to v1alpha1,
// defaults and validation, with the certificate in --webhook-cert-dir, as
// cert-manager mounts it; controller-runtime does not issue one itself. It
// behaves like examples/bucket (same flags, but for --webhook-cert-secret
// and --webhook-cert-hosts of the certificate that one can issue; same
// finalizer, status, events and webhooks) so that the two can be compared
// in lines of code.
package main

import (
	"errors"
	"flag"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	storagev1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	storagev1alpha1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/bucket/store"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(storagev1.AddToScheme(scheme))
	utilruntime.Must(storagev1alpha1.AddToScheme(scheme))
}

func main() {
	var (
		metricsAddr, probeAddr, leaseNamespace, leaseID, storeURL string
		webhookAddr, certDir, defaultRegion, regions              string
		leaderElect                                               bool
		workers, burst                                            int
		qps                                                       float64
		resync, leaseDuration, renewDeadline, retry               time.Duration
		shutdownTimeout                                           time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz; \"0\" disables them.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader with a Lease so that only one replica reconciles.")
	flag.StringVar(&leaseNamespace, "leader-elect-namespace", "", "Namespace of the leader election Lease.")
	flag.StringVar(&leaseID, "leader-elect-id", "bucket-operator", "Name of the leader election Lease.")
	flag.DurationVar(&leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a non-leader waits after the last renewal before taking over.")
	flag.DurationVar(&renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps retrying a renewal before giving up leadership.")
	flag.DurationVar(&retry, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the Lease.")
	flag.Float64Var(&qps, "kube-api-qps", 50, "Requests per second the clients may send to the API server.")
	flag.IntVar(&burst, "kube-api-burst", 100, "Requests the clients may send in a burst above --kube-api-qps.")
	flag.DurationVar(&shutdownTimeout, "shutdown-timeout", 30*time.Second, "How long in-flight reconciles may run after a stop signal.")
	flag.StringVar(&storeURL, "store-url", "http://127.0.0.1:8090", "Base URL of the storage service's HTTP API.")
	flag.DurationVar(&resync, "resync", time.Minute, "How often every Bucket is checked against the storage service, behind its notifications.")
	flag.IntVar(&workers, "workers", 2, "Number of Buckets reconciled at once.")
	flag.StringVar(&webhookAddr, "webhook-bind-address", ":9443", "Address of the webhooks' HTTPS server.")
	flag.StringVar(&certDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory of the webhooks' serving certificate and key, tls.crt and tls.key; reloaded when they change.")
	flag.StringVar(&defaultRegion, "default-region", "", "Region given to a Bucket created without one; without it, such a Bucket is refused.")
	flag.StringVar(&regions, "regions", "", "Comma-separated regions a Bucket may name; any if empty.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setupLog := ctrl.Log.WithName("setup")
	if u, err := url.Parse(storeURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		setupLog.Error(err, "--store-url must be an http or https URL", "url", storeURL)
		os.Exit(2)
	}
	if workers < 1 || resync <= 0 {
		setupLog.Error(nil, "--workers and --resync must be positive")
		os.Exit(2)
	}
	// controller-runtime's webhook server takes the host and the port apart.
	webhookHost, webhookPort, err := net.SplitHostPort(webhookAddr)
	port, errPort := strconv.Atoi(webhookPort)
	if err = errors.Join(err, errPort); err != nil {
		setupLog.Error(err, "--webhook-bind-address must be HOST:PORT", "address", webhookAddr)
		os.Exit(2)
	}
	allowed := strings.FieldsFunc(regions, func(r rune) bool { return r == ',' })
	if defaultRegion != "" && len(allowed) > 0 && !slices.Contains(allowed, defaultRegion) {
		setupLog.Error(nil, "--default-region is not one of --regions", "default-region", defaultRegion, "regions", regions)
		os.Exit(2)
	}

	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(qps), burst, "crbucket"
	if _, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).ServerResourcesForGroupVersion(storagev1.SchemeGroupVersion.String()); err != nil {
		setupLog.Error(err, "the API server does not serve Buckets; install the Bucket CRD with: kubectl apply -f examples/bucket/deploy/crd")
		os.Exit(1)
	}
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
		WebhookServer:                 webhook.NewServer(webhook.Options{Host: webhookHost, Port: port, CertDir: certDir}),
	})
	if err != nil {
		setupLog.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	r := &BucketReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("bucket-operator"), Store: store.NewClient(storeURL, nil), Resync: resync}
	if err := r.SetupWithManager(mgr, workers); err != nil {
		setupLog.Error(err, "unable to create the controller")
		os.Exit(1)
	}
	if err := SetupBucketWebhookWithManager(mgr, defaultRegion, allowed); err != nil {
		setupLog.Error(err, "unable to create the webhooks")
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
