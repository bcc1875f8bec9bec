package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Client-side rate limits. The first sync of N Foos costs about 3N writes
// (Deployment create, one or two status updates) plus an event each; at 500
// requests per second with a burst of 1000, 1,000 Foos need about 8 s of
// client budget, so the API server, not the client, sets the pace. client-go's
// own defaults (5 QPS, burst 10) would stretch that to over 10 minutes.
const (
	defaultKubeAPIQPS   = 500
	defaultKubeAPIBurst = 1000
)

// options are the command-line flags.
type options struct {
	kubeconfig string
	master     string
	workers    int
	resync     time.Duration
	qps        float64
	burst      int

	leaderElect          bool
	leaderElectNamespace string
	leaderElectID        string
	leaseDuration        time.Duration
	renewDeadline        time.Duration
	retryPeriod          time.Duration

	metricsAddr     string
	healthProbeAddr string
	shutdownTimeout time.Duration
}

func bindFlags(fs *flag.FlagSet) *options {
	o := &options{}
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Without it: $KUBECONFIG, then the in-cluster config, then ~/.kube/config.")
	fs.StringVar(&o.master, "master", "", "The address of the Kubernetes API server; overrides the server in the kubeconfig.")
	fs.IntVar(&o.workers, "workers", 2, "Number of Foos reconciled at once.")
	fs.DurationVar(&o.resync, "resync", 10*time.Minute, "How often the informers replay every object to the controller (0 disables). An idle resync writes nothing.")
	fs.Float64Var(&o.qps, "kube-api-qps", defaultKubeAPIQPS, "Requests per second the clients may send to the API server.")
	fs.IntVar(&o.burst, "kube-api-burst", defaultKubeAPIBurst, "Requests the clients may send in a burst above --kube-api-qps.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader with a Lease so that only one replica reconciles.")
	fs.StringVar(&o.leaderElectNamespace, "leader-elect-namespace", "", "Namespace of the leader election Lease (default: the pod's namespace in a cluster, else \"default\").")
	fs.StringVar(&o.leaderElectID, "leader-elect-id", "foo-controller.samplecontroller.k8s.io", "Name of the leader election Lease.")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a non-leader waits after the last renewal before taking over.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps retrying a renewal before giving up leadership.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the Lease.")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	fs.StringVar(&o.healthProbeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz; \"0\" disables them.")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "How long in-flight reconciles may run after a stop signal.")
	return o
}

func (o *options) validate() error {
	var errs []error
	if o.workers < 1 {
		errs = append(errs, fmt.Errorf("--workers must be at least 1, got %d", o.workers))
	}
	if o.resync < 0 {
		errs = append(errs, fmt.Errorf("--resync must not be negative, got %s", o.resync))
	}
	if o.qps <= 0 || o.burst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", o.qps, o.burst))
	}
	if o.shutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout must be positive, got %s", o.shutdownTimeout))
	}
	for flagName, addr := range map[string]string{"--metrics-bind-address": o.metricsAddr, "--health-probe-bind-address": o.healthProbeAddr} {
		if addr == "0" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not host:port or \"0\": %w", flagName, addr, err))
		}
	}
	if o.leaderElect {
		if o.leaderElectID == "" {
			errs = append(errs, errors.New("--leader-elect-id must not be empty"))
		}
		if o.leaseDuration <= o.renewDeadline || o.renewDeadline <= o.retryPeriod || o.retryPeriod <= 0 {
			errs = append(errs, fmt.Errorf("leader election needs lease duration (%s) > renew deadline (%s) > retry period (%s) > 0",
				o.leaseDuration, o.renewDeadline, o.retryPeriod))
		}
	}
	return errors.Join(errs...)
}

// restConfig finds the cluster: --kubeconfig, else $KUBECONFIG, else the
// in-cluster config, else ~/.kube/config. It returns where the config came
// from, for messages.
func (o *options) restConfig() (*rest.Config, string, error) {
	fromFile := func(rules *clientcmd.ClientConfigLoadingRules, source string) (*rest.Config, string, error) {
		overrides := &clientcmd.ConfigOverrides{}
		if o.master != "" {
			overrides.ClusterInfo.Server = o.master
		}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
		if err != nil {
			return nil, source, fmt.Errorf("loading %s: %w", source, err)
		}
		return cfg, source, nil
	}
	if o.kubeconfig != "" {
		return fromFile(&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.kubeconfig}, "--kubeconfig "+o.kubeconfig)
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		return fromFile(&clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(env)}, "$KUBECONFIG "+env)
	}
	if cfg, err := rest.InClusterConfig(); err == nil {
		if o.master != "" {
			cfg.Host = o.master
		}
		return cfg, "the in-cluster config", nil
	} else if !errors.Is(err, rest.ErrNotInCluster) {
		return nil, "the in-cluster config", fmt.Errorf("loading the in-cluster config: %w", err)
	}
	home := clientcmd.RecommendedHomeFile
	if _, err := os.Stat(home); err == nil {
		return fromFile(&clientcmd.ClientConfigLoadingRules{ExplicitPath: home}, home)
	}
	if o.master != "" {
		return &rest.Config{Host: o.master}, "--master " + o.master, nil
	}
	return nil, "", errors.New("no cluster configuration: pass --kubeconfig, set $KUBECONFIG, run in a cluster, or create ~/.kube/config")
}

// leaderElectionNamespace picks the Lease's namespace: the flag, else the
// pod's namespace when running in a cluster, else "default".
func (o *options) leaderElectionNamespace() string {
	if o.leaderElectNamespace != "" {
		return o.leaderElectNamespace
	}
	if data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(data) > 0 {
		return string(data)
	}
	return "default"
}
