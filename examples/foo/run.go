package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/uuid"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/metrics"
)

// crdInstallHint tells how to install the Foo CRD.
const crdInstallHint = "kubectl apply -f foo/crd/samplecontroller.k8s.io_foos.yaml"

// preflightTimeout bounds the start-up check that the cluster answers.
const preflightTimeout = 15 * time.Second

// runController connects to the cluster, checks that the Foo API is served,
// starts the informers, the metrics and health endpoints and the controller
// (behind leader election if asked), and returns when ctx is cancelled and
// everything has stopped.
func (o *options) runController(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	cfg, source, err := o.restConfig()
	if err != nil {
		return err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = float32(o.qps)
	cfg.Burst = o.burst
	cfg.UserAgent = "ctrlkit-foo-controller"
	logger.Info("Using cluster", "host", cfg.Host, "config", source)

	kubeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building the Kubernetes client: %w", err)
	}
	fooClient, err := fooclientset.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building the Foo client: %w", err)
	}
	if err := preflight(ctx, cfg); err != nil {
		return err
	}

	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	recorder, err := metrics.New(registry)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}

	kubeInformers := kubeinformers.NewSharedInformerFactory(kubeClient, o.resync)
	fooInformers := fooinformers.NewSharedInformerFactory(fooClient, o.resync)
	ctrl, err := foo.NewController(ctx, kubeClient, fooClient,
		kubeInformers.Apps().V1().Deployments(), fooInformers.Samplecontroller().V1alpha1().Foos(),
		foo.Options{Workers: o.workers, Metrics: recorder, ShutdownTimeout: o.shutdownTimeout})
	if err != nil {
		return err
	}

	var servers sync.WaitGroup
	serveErrs := make(chan error, 2)
	serve := func(ctx context.Context, name, addr string, handler http.Handler) error {
		if addr == "0" {
			return nil
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s endpoint: %w", name, err)
		}
		logger.Info("Serving", "endpoint", name, "address", ln.Addr().String())
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		servers.Go(func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				serveErrs <- fmt.Errorf("%s endpoint: %w", name, err)
			}
		})
		servers.Go(func() {
			<-ctx.Done()
			shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdownCtx)
		})
		return nil
	}
	metricsMux := http.NewServeMux()
	metricsMux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{Registry: registry}))
	healthMux := http.NewServeMux()
	healthMux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	healthMux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ctrl.HasSynced() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	// Servers and informers stop with stopCtx: when ctx ends, or when this
	// function returns for any other reason (an error, a lost Lease).
	stopCtx, stopAll := context.WithCancel(ctx)
	defer func() {
		stopAll()
		servers.Wait()
		kubeInformers.Shutdown()
		fooInformers.Shutdown()
	}()
	if err := serve(stopCtx, "metrics", o.metricsAddr, metricsMux); err != nil {
		ctrl.ShutDown()
		return err
	}
	if err := serve(stopCtx, "health", o.healthProbeAddr, healthMux); err != nil {
		ctrl.ShutDown()
		return err
	}

	kubeInformers.Start(stopCtx.Done())
	fooInformers.Start(stopCtx.Done())

	var runErr error
	if o.leaderElect {
		runErr = o.runElected(ctx, kubeClient, ctrl)
	} else {
		runErr = ctrl.Run(ctx)
	}
	select {
	case err := <-serveErrs:
		runErr = errors.Join(runErr, err)
	default:
	}
	return runErr
}

// preflight fails fast, with a message that says what to do, when the
// cluster cannot be reached or does not serve the Foo API.
func preflight(ctx context.Context, cfg *rest.Config) error {
	check := rest.CopyConfig(cfg)
	check.Timeout = preflightTimeout
	client, err := kubernetes.NewForConfig(check)
	if err != nil {
		return fmt.Errorf("building the discovery client: %w", err)
	}
	gv := samplev1alpha1.SchemeGroupVersion.String()
	_, err = client.Discovery().ServerResourcesForGroupVersion(gv)
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the API server at %s does not serve %s: the Foo CRD is not installed; install it with: %s", cfg.Host, gv, crdInstallHint)
	case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
		return fmt.Errorf("the API server at %s refused the credentials: %w", cfg.Host, err)
	default:
		return fmt.Errorf("cannot reach the API server at %s: %w", cfg.Host, err)
	}
}

// runElected runs the controller only while this process holds the Lease.
// On ctx cancellation the controller stops first and only then is the Lease
// released, so two replicas never write at the same time. Losing the Lease
// is an error: the process should exit and start again as a candidate.
func (o *options) runElected(ctx context.Context, kubeClient kubernetes.Interface, ctrl *foo.Controller) error {
	logger := klog.FromContext(ctx)
	hostname, _ := os.Hostname()
	identity := hostname + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.leaderElectionNamespace(), o.leaderElectID,
		kubeClient.CoreV1(), kubeClient.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}

	// The elector gets its own context so that the Lease outlives the
	// controller's shutdown and is released only after it.
	electCtx, cancelElect := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElect()
	// state decides, under mu, whether the controller runs: once the elector
	// has returned, a late OnStartedLeading must not start it.
	var (
		mu       sync.Mutex
		leading  bool
		finished bool
	)
	ctrlDone := make(chan error, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.leaseDuration,
		RenewDeadline:   o.renewDeadline,
		RetryPeriod:     o.retryPeriod,
		ReleaseOnCancel: true,
		Name:            o.leaderElectID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaderCtx context.Context) {
				mu.Lock()
				if finished {
					mu.Unlock()
					return
				}
				leading = true
				mu.Unlock()
				logger.Info("Became the leader", "identity", identity)
				runCtx, cancel := context.WithCancel(leaderCtx)
				stop := context.AfterFunc(ctx, cancel)
				err := ctrl.Run(runCtx)
				stop()
				cancel()
				ctrlDone <- err
				cancelElect() // the controller has stopped: release the Lease
			},
			OnStoppedLeading: func() {
				logger.Info("Stopped leading", "identity", identity)
			},
			OnNewLeader: func(id string) {
				if id != identity {
					logger.Info("Another replica leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	// A candidate that is not leading stops electing as soon as ctx ends.
	stopWatch := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !leading {
			cancelElect()
		}
	})
	defer stopWatch()

	elector.Run(electCtx)
	mu.Lock()
	finished = true
	wasLeading := leading
	mu.Unlock()
	if !wasLeading {
		ctrl.ShutDown()
		return nil
	}
	err = <-ctrlDone
	if ctx.Err() == nil {
		return errors.Join(err, errors.New("lost the leader election Lease"))
	}
	return err
}
