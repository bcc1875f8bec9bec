package operator

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/leader"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/webhook"
)

// Flags are the command-line flags every operator has. Set the defaults in
// the struct, then Bind registers the flags with them:
//
//	flags := operator.Flags{LeaderElectID: "foo-controller", MetricsAddr: ":8080", ProbeAddr: ":8081"}
//	flags.Bind(flag.CommandLine)
//
// Zero fields get the defaults documented on each flag. After parsing, the
// flags hand out what they imply, so that nothing has to be passed on by
// hand: Informers makes the informer factories (with the managedFields
// transform) and Run gets them from Options; ControllerOptions carries the
// shutdown timeout and the metrics to every controller; Shard shares a
// controller's keys with --sharded; Options carries the rest to Run. A
// Flags is not safe for concurrent use.
type Flags struct {
	// Kubeconfig (--kubeconfig) and Master (--master) locate the cluster;
	// see RESTConfig.
	Kubeconfig, Master string
	// QPS (--kube-api-qps, default 50) and Burst (--kube-api-burst,
	// default 100) limit the client's requests.
	QPS   float64
	Burst int
	// LeaderElect (--leader-elect) runs the controllers behind leader
	// election on the Lease LeaderElectNamespace/LeaderElectID
	// (--leader-elect-namespace, default: the pod's namespace in a
	// cluster, else "default"; --leader-elect-id).
	LeaderElect          bool
	LeaderElectNamespace string
	LeaderElectID        string
	// Identity (--identity) names this replica in its Lease. With
	// --sharded, a process started with the identity of one that is gone
	// takes that one's Lease over without waiting for it to expire: give
	// it the pod name (a container restarted in its pod keeps it). Two
	// live processes must never share one. Default: the host name and a
	// random suffix, unique per process.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod
	// (--leader-elect-lease-duration, --leader-elect-renew-deadline,
	// --leader-elect-retry-period) default to those of package leader.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// MetricsAddr (--metrics-bind-address) and ProbeAddr
	// (--health-probe-bind-address) are host:port; "0" or empty disables
	// the endpoint.
	MetricsAddr, ProbeAddr string
	// PprofAddr (--pprof-bind-address) serves Go's runtime profiles at
	// /debug/pprof/ (see WithProfiling); "0" or empty, the default,
	// disables them.
	PprofAddr string
	// ShutdownTimeout (--shutdown-timeout, default
	// queue.DefaultShutdownTimeout) bounds how long in-flight reconciles
	// may run after a stop signal (see ControllerOptions).
	ShutdownTimeout time.Duration
	// CacheSyncTimeout (--cache-sync-timeout, default
	// DefaultCacheSyncTimeout) bounds how long Run waits for caches to
	// sync before it fails (see WithCacheSyncTimeout); Options passes it
	// to Run.
	CacheSyncTimeout time.Duration
	// WebhookAddr (--webhook-bind-address, default DefaultWebhookAddr)
	// and WebhookCertDir (--webhook-cert-dir, default
	// DefaultWebhookCertDir) are where Webhooks serves the operator's
	// webhooks and the directory of their certificate and key, tls.crt
	// and tls.key, such as a TLS Secret that cert-manager renews, mounted
	// there. Only an operator that calls Webhooks uses them.
	WebhookAddr, WebhookCertDir string
	// WebhookCertSecret (--webhook-cert-secret, NAMESPACE/NAME) makes
	// Webhooks serve a certificate the operator issues and renews itself,
	// kept in that Secret and shared by its replicas
	// (webhook.NewManagedCertificates), instead of reading WebhookCertDir.
	// It is issued for WebhookCertHosts (--webhook-cert-hosts): the DNS
	// names or IP addresses the API server calls the webhooks at, such as
	// the webhook Service's "NAME.NAMESPACE.svc". Its CA is published as
	// the caBundle of the objects WebhookCABundles names.
	WebhookCertSecret string
	WebhookCertHosts  []string
	// WebhookCABundles names the webhook configurations and CRDs of the
	// operator's manifests whose caBundle Webhooks keeps current with the
	// CA of the certificate it issues under WebhookCertSecret.
	WebhookCABundles webhook.CABundles
	// ContentType (--kube-api-content-type) is the encoding of the
	// requests of RESTConfig's clients and of the answers they ask for:
	// ContentTypeProtobuf, the default, or ContentTypeJSON. See RESTConfig.
	ContentType string
	// MemoryLimit (--memory-limit) is the Go runtime's soft memory limit
	// that Main sets before it runs the operator: a whole number of bytes
	// written as a quantity such as "512Mi" (Mi, Gi: powers of 1024; M,
	// G: of 1000; a lowercase m means thousandths, so "512m" is refused
	// as a fraction of a byte), at least MinMemoryLimit (1Mi), "0" for
	// none, or empty for the default: $GOMEMLIMIT if set, else
	// MemoryLimitShare of the container's memory limit (its cgroup's
	// memory.max), else none. Validate refuses any other value. Near the
	// limit the runtime collects garbage more often instead of letting the
	// heap grow to twice the live data (GOGC=100), so a controller whose
	// caches fill most of its container is not killed for memory it holds
	// only as garbage. See runtime/debug.SetMemoryLimit.
	MemoryLimit string
	// KeepManagedFields (--keep-managed-fields) keeps metadata.managedFields
	// in the caches of the informer factories made by Informers; by
	// default they are dropped (informer.StripManagedFields).
	KeepManagedFields bool
	// Sharded (--sharded) shares the keys with the other replicas run with
	// --sharded and the same --leader-elect-id, each on a Lease of its own
	// in the leader election namespace named after the id, with the leader
	// election timing (see Shard and package shard). It excludes
	// --leader-elect.
	Sharded bool
	// TracingEndpoint (--tracing-endpoint) turns tracing on (see
	// TracerProvider): the OTLP/HTTP URL of a collector, such as
	// http://otel-collector:4318 (/v1/traces is added to its path, as for
	// $OTEL_EXPORTER_OTLP_ENDPOINT, unless the path ends with /v1/traces);
	// Validate refuses a host:port without the scheme. Default:
	// $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or $OTEL_EXPORTER_OTLP_ENDPOINT
	// if set (URLs too), else no tracing. docs/operator.md lists every
	// OTEL_* variable the flags honour.
	TracingEndpoint string
	// TracingSamplingRatio (--tracing-sampling-ratio) is the share of
	// traces started by the operator (reconciles that no sampled write or
	// parent set off) that are sampled, between 0 and 1; reconciles follow
	// the decision of the writes they link to. Default: the ratio
	// $OTEL_TRACES_SAMPLER and $OTEL_TRACES_SAMPLER_ARG name, else 1;
	// left at zero before Bind and not given as a flag, the sampler too
	// is the one $OTEL_TRACES_SAMPLER names (see TracerProvider).
	// Validate refuses the flag given without an endpoint (it would do
	// nothing), and a sampler or argument in the environment that
	// TracerProvider cannot build.
	TracingSamplingRatio float64
	// TracingDropEmpty (--tracing-drop-empty) drops the spans of
	// reconciles that wrote nothing and did not fail (tracing.DropEmpty).
	// Validate refuses the flag given without an endpoint; set in the
	// struct before Bind, it is the program's default for when tracing
	// is on.
	TracingDropEmpty bool
	// Version (--version) makes Main print the binary's version
	// (BuildVersion: module, VCS revision and time, Go version) to standard
	// output and return 0, without checking the other flags or connecting
	// anywhere.
	Version bool

	// What the flags hand out, made on first use. The options of Options
	// read them when Run applies them, so that Options, Informers and
	// Shard may be called in any order.
	membership *shard.Membership  // the replica's, made by the first Membership or Shard
	factories  []informer.Factory // made by Informers
	registry   *prometheus.Registry
	metrics    *metrics.Recorder
	tracer     *sdktrace.TracerProvider // made by TracerProvider
	tracerErr  error
	// samplerFromEnv: TracingSamplingRatio was neither set before Bind
	// nor given as a flag, so $OTEL_TRACES_SAMPLER names the sampler.
	samplerFromEnv bool
	// ratioGiven and dropEmptyGiven: --tracing-sampling-ratio and
	// --tracing-drop-empty (true) were given on the command line.
	ratioGiven, dropEmptyGiven bool
}

// Flag defaults not taken from other packages.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// Defaults of --webhook-bind-address and --webhook-cert-dir, those of
// controller-runtime's webhook server.
const (
	DefaultWebhookAddr    = ":9443"
	DefaultWebhookCertDir = "/tmp/k8s-webhook-server/serving-certs"
)

// The values of --kube-api-content-type.
const (
	ContentTypeProtobuf = "application/vnd.kubernetes.protobuf"
	ContentTypeJSON     = "application/json"
)

// Bind registers the flags on fs, with f's values (or the documented
// defaults) as defaults, and klog's flags (-v and the others).
func (f *Flags) Bind(fs *flag.FlagSet) {
	if f.QPS == 0 {
		f.QPS = DefaultQPS
	}
	if f.Burst == 0 {
		f.Burst = DefaultBurst
	}
	if f.LeaseDuration == 0 {
		f.LeaseDuration = leader.DefaultLeaseDuration
	}
	if f.RenewDeadline == 0 {
		f.RenewDeadline = leader.DefaultRenewDeadline
	}
	if f.RetryPeriod == 0 {
		f.RetryPeriod = leader.DefaultRetryPeriod
	}
	if f.ShutdownTimeout == 0 {
		f.ShutdownTimeout = queue.DefaultShutdownTimeout
	}
	if f.CacheSyncTimeout == 0 {
		f.CacheSyncTimeout = DefaultCacheSyncTimeout
	}
	if f.ContentType == "" {
		f.ContentType = ContentTypeProtobuf
	}
	if f.WebhookAddr == "" {
		f.WebhookAddr = DefaultWebhookAddr
	}
	if f.WebhookCertDir == "" {
		f.WebhookCertDir = DefaultWebhookCertDir
	}
	if f.TracingSamplingRatio == 0 {
		// Until --tracing-sampling-ratio is given, $OTEL_TRACES_SAMPLER
		// names the sampler.
		f.samplerFromEnv = true
		f.TracingSamplingRatio = defaultSamplingRatio()
	}
	fs.StringVar(&f.Kubeconfig, "kubeconfig", f.Kubeconfig, "Path to a kubeconfig. Without it: $KUBECONFIG, then the in-cluster config, then ~/.kube/config.")
	fs.StringVar(&f.Master, "master", f.Master, "The address of the Kubernetes API server; overrides the server in the kubeconfig.")
	fs.Float64Var(&f.QPS, "kube-api-qps", f.QPS, "Requests per second the clients may send to the API server.")
	fs.IntVar(&f.Burst, "kube-api-burst", f.Burst, "Requests the clients may send in a burst above --kube-api-qps.")
	fs.BoolVar(&f.LeaderElect, "leader-elect", f.LeaderElect, "Elect a leader with a Lease so that only one replica reconciles.")
	fs.BoolVar(&f.Sharded, "sharded", f.Sharded, "Share the keys with the other replicas run with --sharded and the same --leader-elect-id: each reconciles its share, and takes over the shares of replicas that stop. Excludes --leader-elect.")
	fs.StringVar(&f.LeaderElectNamespace, "leader-elect-namespace", f.LeaderElectNamespace, "Namespace of the leader election Lease (default: the pod's namespace in a cluster, else \"default\").")
	fs.StringVar(&f.Identity, "identity", f.Identity, "This replica's name in its Lease; with --sharded, a process restarted with the identity of one that is gone takes its Lease over at once. Use the pod name; never give two live processes the same one. Default: the host name and a random suffix.")
	fs.StringVar(&f.LeaderElectID, "leader-elect-id", f.LeaderElectID, "Name of the leader election Lease; with --sharded, the group whose replicas share the keys (each on a Lease named after it).")
	fs.DurationVar(&f.LeaseDuration, "leader-elect-lease-duration", f.LeaseDuration, "How long a non-leader waits after the last renewal before taking over, a whole number of seconds (at least 1s: the Lease records it in seconds); with --sharded, how long a replica's keys stay its own after its last renewal.")
	fs.DurationVar(&f.RenewDeadline, "leader-elect-renew-deadline", f.RenewDeadline, "How long the leader keeps retrying a renewal before giving up leadership; with --sharded, how long a replica keeps its keys without a renewal coming back.")
	fs.DurationVar(&f.RetryPeriod, "leader-elect-retry-period", f.RetryPeriod, "How often candidates try to acquire or renew the Lease; with --sharded, how often each replica renews its own.")
	fs.StringVar(&f.MetricsAddr, "metrics-bind-address", f.MetricsAddr, "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	fs.StringVar(&f.ProbeAddr, "health-probe-bind-address", f.ProbeAddr, "Address of /healthz and /readyz; \"0\" disables them.")
	fs.StringVar(&f.PprofAddr, "pprof-bind-address", f.PprofAddr, "Address of Go's runtime profiles at /debug/pprof/; \"0\" or empty disables them. Serve them only on a protected address.")
	fs.StringVar(&f.ContentType, "kube-api-content-type", f.ContentType, "Encoding of requests to the API server and of its answers: "+ContentTypeProtobuf+" (built-in kinds in protobuf, custom resources in JSON) or "+ContentTypeJSON+" (everything in JSON).")
	fs.StringVar(&f.WebhookAddr, "webhook-bind-address", f.WebhookAddr, "Address of the webhooks' HTTPS server, for an operator that serves webhooks.")
	fs.StringVar(&f.WebhookCertDir, "webhook-cert-dir", f.WebhookCertDir, "Directory of the webhooks' serving certificate and key, tls.crt and tls.key; reloaded when they change.")
	fs.StringVar(&f.WebhookCertSecret, "webhook-cert-secret", f.WebhookCertSecret, "NAMESPACE/NAME of a Secret in which the operator issues and renews the webhooks' certificate itself, publishing its CA in its webhook configurations and CRDs, instead of reading --webhook-cert-dir.")
	fs.Var((*hostList)(&f.WebhookCertHosts), "webhook-cert-hosts", "Comma-separated DNS names and IP addresses the certificate issued with --webhook-cert-secret is valid for: where the API server calls the webhooks.")
	fs.StringVar(&f.MemoryLimit, "memory-limit", f.MemoryLimit, "Soft memory limit of the Go runtime, such as 512Mi (at least 1Mi; 512m would be 0.512 bytes), or 0 for none (default: $GOMEMLIMIT, else 90% of the container's memory limit).")
	fs.BoolVar(&f.KeepManagedFields, "keep-managed-fields", f.KeepManagedFields, "Keep metadata.managedFields in the informer caches. By default they are dropped: controllers rarely read them, and they are about a third of a cached object.")
	fs.DurationVar(&f.ShutdownTimeout, "shutdown-timeout", f.ShutdownTimeout, "How long in-flight reconciles may run after a stop signal.")
	fs.DurationVar(&f.CacheSyncTimeout, "cache-sync-timeout", f.CacheSyncTimeout, "How long to wait for the informer caches and the controllers to sync before giving up with an error.")
	fs.StringVar(&f.TracingEndpoint, "tracing-endpoint", f.TracingEndpoint, "OTLP/HTTP URL of a trace collector, such as http://otel-collector:4318 (with the scheme); traces every reconcile and client request. Default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or $OTEL_EXPORTER_OTLP_ENDPOINT, else no tracing.")
	fs.Var(ratioFlag{f}, "tracing-sampling-ratio", "Share (0 to 1) of the traces the operator starts that are sampled; reconciles set off by a traced write follow its decision. Default: the sampler $OTEL_TRACES_SAMPLER and $OTEL_TRACES_SAMPLER_ARG name, else 1. Needs an endpoint.")
	fs.Var(dropEmptyFlag{f}, "tracing-drop-empty", "Drop the spans of reconciles that wrote nothing and did not fail. Needs an endpoint.")
	fs.BoolVar(&f.Version, "version", f.Version, "Print the version of this binary (module, VCS revision and time, Go version) and exit.")
	klog.InitFlags(fs)
}

// Validate reports every flag value that cannot work, and the OTEL_*
// variables the tracing flags read (see TracerProvider) whose values they
// cannot use.
func (f *Flags) Validate() error {
	var errs []error
	if !(f.QPS > 0) || f.Burst < 1 { // NaN too
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", f.QPS, f.Burst))
	}
	if f.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout must be positive, got %s", f.ShutdownTimeout))
	}
	if f.CacheSyncTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--cache-sync-timeout must be positive, got %s", f.CacheSyncTimeout))
	}
	for name, addr := range map[string]string{"--metrics-bind-address": f.MetricsAddr, "--health-probe-bind-address": f.ProbeAddr, "--pprof-bind-address": f.PprofAddr} {
		if enabled(addr) {
			if _, _, err := net.SplitHostPort(addr); err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not host:port or \"0\": %w", name, addr, err))
			}
		}
	}
	if f.ContentType != "" && f.ContentType != ContentTypeProtobuf && f.ContentType != ContentTypeJSON {
		errs = append(errs, fmt.Errorf("--kube-api-content-type must be %s or %s, got %q", ContentTypeProtobuf, ContentTypeJSON, f.ContentType))
	}
	if f.MemoryLimit != "" {
		if _, _, err := memoryLimit(f.MemoryLimit, ""); err != nil {
			errs = append(errs, err)
		}
	}
	if f.WebhookCertSecret != "" {
		if ns, name, ok := strings.Cut(f.WebhookCertSecret, "/"); !ok || ns == "" || name == "" {
			errs = append(errs, fmt.Errorf("--webhook-cert-secret must be NAMESPACE/NAME, got %q", f.WebhookCertSecret))
		}
		if len(f.WebhookCertHosts) == 0 {
			errs = append(errs, errors.New("--webhook-cert-secret needs --webhook-cert-hosts, the names the certificate is issued for"))
		}
	}
	errs = append(errs, f.validateTracing()...)
	if f.LeaderElect && f.Sharded {
		errs = append(errs, errors.New("--leader-elect and --sharded exclude each other"))
	}
	if f.LeaderElect && (f.LeaseDuration < time.Second || f.LeaseDuration%time.Second != 0) {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%s) must be a whole number of seconds, at least 1s: the Lease records it in whole seconds", f.LeaseDuration))
	}
	if f.LeaderElect || f.Sharded {
		if f.LeaderElectID == "" {
			errs = append(errs, errors.New("--leader-elect-id must not be empty"))
		}
		if f.Sharded && f.LeaderElectID != "" {
			if err := validGroup(f.LeaderElectID); err != nil {
				errs = append(errs, err)
			}
		}
		if f.LeaderElect && f.LeaderElectID != "" {
			if msgs := validation.IsDNS1123Subdomain(f.LeaderElectID); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("--leader-elect-id %q names the Lease, so it must be a DNS-1123 subdomain: %s", f.LeaderElectID, strings.Join(msgs, "; ")))
			}
		}
		check := leader.CheckTimings
		if f.Sharded {
			check = shard.CheckTimings
		}
		if err := check(f.LeaseDuration, f.RenewDeadline, f.RetryPeriod); err != nil {
			errs = append(errs, fmt.Errorf("--leader-elect-lease-duration, --leader-elect-renew-deadline, --leader-elect-retry-period: %w", err))
		}
	}
	return errors.Join(errs...)
}

func enabled(addr string) bool { return addr != "" && addr != "0" }

// validGroup checks a shard group name. The group is a label value of
// every member's Lease and the prefix of its name, so it must be both: a
// DNS-1123 subdomain (lowercase letters, digits, '-' and '.') of at most
// 63 characters.
func validGroup(group string) error {
	msgs := slices.Concat(validation.IsDNS1123Subdomain(group), validation.IsValidLabelValue(group))
	if len(msgs) == 0 {
		return nil
	}
	slices.Sort(msgs)
	return fmt.Errorf("--leader-elect-id %q names the shard group, the label value and name prefix of its Leases, so it must be a valid label value and DNS-1123 subdomain: %s",
		group, strings.Join(slices.Compact(msgs), "; "))
}

// RESTConfig finds the cluster: --kubeconfig, else $KUBECONFIG, else the
// in-cluster config, else ~/.kube/config; --master overrides the server of
// any of them. The returned config carries the client rate limits of the
// flags and userAgent, and with tracing on (see TracerProvider) the
// transport of tracing.Transport: every request is a client span and
// carries the traceparent header. Errors say where the configuration came
// from.
//
// With --kube-api-content-type=application/vnd.kubernetes.protobuf (the
// default) the config leaves the encoding to each client, as client-go's
// generated clients choose it: the clients of built-in kinds send protobuf
// and ask for protobuf, then JSON, which costs the controller less to
// encode and decode and lets the API server send one encoding it may
// already hold for other watchers; the clients of custom resources, and
// dynamic and other REST clients, use JSON, the only one of the two custom
// resources are served in (or CBOR, where client-go's ClientsAllowCBOR and
// ClientsPreferCBOR feature gates are enabled in the process, against an
// API server that serves it). With application/json every request and
// answer is JSON.
func (f *Flags) RESTConfig(userAgent string) (*rest.Config, error) {
	cfg, err := f.findConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = float32(f.QPS)
	cfg.Burst = f.Burst
	cfg.UserAgent = userAgent
	// Left empty, client-go's clients of built-in kinds use protobuf, and
	// the others JSON.
	cfg.ContentType, cfg.AcceptContentTypes = "", ""
	if f.ContentType == ContentTypeJSON {
		cfg.ContentType, cfg.AcceptContentTypes = ContentTypeJSON, ContentTypeJSON
	}
	tp, err := f.TracerProvider()
	if err != nil {
		return nil, err
	}
	tracing.WrapConfig(cfg, tp)
	return cfg, nil
}

func (f *Flags) findConfig() (*rest.Config, error) {
	fromFile := func(rules *clientcmd.ClientConfigLoadingRules, source string) (*rest.Config, error) {
		overrides := &clientcmd.ConfigOverrides{}
		if f.Master != "" {
			overrides.ClusterInfo.Server = f.Master
		}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading %s: %w", source, err)
		}
		return cfg, nil
	}
	if f.Kubeconfig != "" {
		return fromFile(&clientcmd.ClientConfigLoadingRules{ExplicitPath: f.Kubeconfig}, "--kubeconfig "+f.Kubeconfig)
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		return fromFile(&clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(env)}, "$KUBECONFIG "+env)
	}
	if cfg, err := rest.InClusterConfig(); err == nil {
		if f.Master != "" {
			cfg.Host = f.Master
		}
		return cfg, nil
	} else if !errors.Is(err, rest.ErrNotInCluster) {
		return nil, fmt.Errorf("loading the in-cluster config: %w", err)
	}
	if home := filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName); fileExists(home) {
		return fromFile(&clientcmd.ClientConfigLoadingRules{ExplicitPath: home}, home)
	}
	if f.Master != "" {
		return &rest.Config{Host: f.Master}, nil
	}
	return nil, errors.New("no cluster configuration: pass --kubeconfig, set $KUBECONFIG, run in a cluster, or create ~/.kube/config")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// serviceAccountNamespace is where a pod finds its namespace.
var serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Options returns the options of Run that the flags decide: the informer
// factories made by Informers, leader election on client, or with --sharded
// the membership that Shard creates, the probes, the metrics endpoint
// serving Registry with the series of every informer's cache
// (WithCacheMetrics), the profiles, the cache sync timeout and the
// shutdown of the tracer provider (WithTracerProvider). Options,
// Informers and Shard may be called in any order: what they make is looked
// up when Run applies the options, and with --sharded Run fails if no
// controller was restricted by Shard.
func (f *Flags) Options(client kubernetes.Interface) []Option {
	opts := []Option{func(c *config) { WithInformers(f.factories...)(c) }}
	if f.Sharded {
		opts = append(opts, func(c *config) {
			if f.membership == nil {
				c.errs = append(c.errs, errors.New("--sharded, but no controller is restricted by Shard: every replica would reconcile every key"))
				return
			}
			WithSharding(f.membership)(c)
		})
	}
	if f.LeaderElect {
		opts = append(opts, WithLeaderElection(leader.Config{
			Client: client, Namespace: f.leaseNamespace(), Name: f.LeaderElectID, Identity: f.Identity,
			LeaseDuration: f.LeaseDuration, RenewDeadline: f.RenewDeadline, RetryPeriod: f.RetryPeriod,
		}))
	}
	if enabled(f.ProbeAddr) {
		opts = append(opts, WithProbes(f.ProbeAddr))
	}
	if enabled(f.MetricsAddr) {
		opts = append(opts, WithMetrics(f.MetricsAddr, metrics.Handler(f.Registry())), WithCacheMetrics(f.Metrics()))
	}
	if enabled(f.PprofAddr) {
		opts = append(opts, WithProfiling(f.PprofAddr))
	}
	if f.CacheSyncTimeout != 0 {
		opts = append(opts, WithCacheSyncTimeout(f.CacheSyncTimeout))
	}
	if f.TracingEnabled() {
		opts = append(opts, func(c *config) {
			if f.tracer != nil {
				WithTracerProvider(f.tracer)(c)
			}
		})
	}
	return opts
}

// Webhooks returns the server of the operator's webhooks that opts give
// (webhook.Handle), at --webhook-bind-address, counted in Metrics unless
// --metrics-bind-address is disabled; Run serves it when given
// WithWebhooks. Its certificate is the one in --webhook-cert-dir
// (reloaded when it is renewed; Webhooks fails if it does not load), or
// with --webhook-cert-secret one the operator issues itself, through
// clients of cfg (which is used for nothing else).
func (f *Flags) Webhooks(cfg *rest.Config, opts ...webhook.Option) (*webhook.Server, error) {
	var certs webhook.Certificates
	if f.WebhookCertSecret != "" {
		managed, err := f.managedCertificates(cfg)
		if err != nil {
			return nil, fmt.Errorf("operator: --webhook-cert-secret %s: %w", f.WebhookCertSecret, err)
		}
		certs = managed
	} else {
		files, err := webhook.NewCertFiles(filepath.Join(f.WebhookCertDir, "tls.crt"), filepath.Join(f.WebhookCertDir, "tls.key"))
		if err != nil {
			return nil, fmt.Errorf("operator: --webhook-cert-dir %s: %w", f.WebhookCertDir, err)
		}
		certs = files
	}
	if enabled(f.MetricsAddr) {
		opts = append(opts, webhook.WithMetrics(f.Metrics()))
	}
	return webhook.NewServer(f.WebhookAddr, certs, opts...)
}

// managedCertificates returns the certificates of --webhook-cert-secret.
func (f *Flags) managedCertificates(cfg *rest.Config) (*webhook.ManagedCertificates, error) {
	if cfg == nil {
		return nil, errors.New("no REST config for the clients of the Secret and the caBundles")
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	managed := webhook.ManagedConfig{Client: kube, Dynamic: dyn, CABundles: f.WebhookCABundles}
	managed.Namespace, managed.Name, _ = strings.Cut(f.WebhookCertSecret, "/")
	for _, host := range f.WebhookCertHosts {
		if ip := net.ParseIP(host); ip != nil {
			managed.IPAddresses = append(managed.IPAddresses, ip)
		} else {
			managed.DNSNames = append(managed.DNSNames, host)
		}
	}
	return webhook.NewManagedCertificates(managed)
}

// hostList is the flag.Value of a comma-separated list of hosts.
type hostList []string

func (h *hostList) String() string { return strings.Join(*h, ",") }

func (h *hostList) Set(value string) error {
	*h = nil
	for _, host := range strings.Split(value, ",") {
		if host = strings.TrimSpace(host); host != "" {
			*h = append(*h, host)
		}
	}
	return nil
}

// leaseNamespace is --leader-elect-namespace or its default.
func (f *Flags) leaseNamespace() string {
	if f.LeaderElectNamespace != "" {
		return f.LeaderElectNamespace
	}
	if data, err := os.ReadFile(serviceAccountNamespace); err == nil && len(strings.TrimSpace(string(data))) > 0 {
		return strings.TrimSpace(string(data))
	}
	return "default"
}

// Membership returns this replica's membership (package shard) when
// --sharded is set, and nil otherwise. The first call creates it, on
// client, with the operator's metrics unless --metrics-bind-address is
// disabled; the options of Options run it, whether Options was called
// before or after. Pass it to shard.Informer to shard the caches too.
func (f *Flags) Membership(client kubernetes.Interface) (*shard.Membership, error) {
	if !f.Sharded {
		return nil, nil
	}
	if f.membership == nil {
		var sm shard.Metrics
		if enabled(f.MetricsAddr) {
			sm = f.Metrics()
		}
		m, err := shard.New(shard.Config{
			Client: client, Namespace: f.leaseNamespace(), Group: f.LeaderElectID, Identity: f.Identity, Metrics: sm,
			LeaseDuration: f.LeaseDuration, RenewDeadline: f.RenewDeadline, RetryPeriod: f.RetryPeriod,
		})
		if err != nil {
			return nil, err
		}
		f.membership = m
	}
	return f.membership, nil
}

// Shard restricts ctrl to the keys this replica owns when --sharded is set
// (see Controller.Restrict of package queue), and does nothing otherwise.
// Every controller of the operator gets its own Gate on the replica's
// Membership, for its keys. Shard must be called before the controller
// runs; it fails if the membership cannot be created.
func Shard[K comparable](f *Flags, ctrl *queue.Controller[K], client kubernetes.Interface, keys shard.Keys[K]) error {
	m, err := f.Membership(client)
	if m == nil || err != nil {
		return err
	}
	return ctrl.Restrict(shard.NewGate(m, keys))
}

// Informers makes an informer factory with build, which is given the
// transform the flags decide (informer.StripManagedFields, or nil with
// --keep-managed-fields), and returns it; Run starts and stops every factory
// made so (see Options). build is usually a generated factory's constructor:
//
//	kubeInformers := operator.Informers(&flags, func(transform cache.TransformFunc) kubeinformers.SharedInformerFactory {
//		return kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, resync, kubeinformers.WithTransform(transform))
//	})
func Informers[F informer.Factory](f *Flags, build func(transform cache.TransformFunc) F) F {
	var transform cache.TransformFunc
	if !f.KeepManagedFields {
		transform = informer.StripManagedFields
	}
	factory := build(transform)
	f.factories = append(f.factories, factory)
	return factory
}

// ControllerOptions returns the queue options the flags decide for every
// controller: the shutdown timeout, unless --metrics-bind-address is
// disabled the operator's metrics (see Metrics), and with tracing on the
// tracer provider (queue.WithTracing with TracerProvider; one that cannot
// be made leaves the controllers untraced, and RESTConfig returns its
// error). Pass them to queue.New before the
// controller's own options, which may override them.
func (f *Flags) ControllerOptions() []queue.Option {
	timeout := f.ShutdownTimeout
	if timeout == 0 {
		timeout = queue.DefaultShutdownTimeout
	}
	opts := []queue.Option{queue.WithShutdownTimeout(timeout)}
	if enabled(f.MetricsAddr) {
		opts = append(opts, queue.WithMetrics(f.Metrics()))
	}
	if tp, err := f.TracerProvider(); err == nil && tp != nil {
		opts = append(opts, queue.WithTracing(tp))
	}
	return opts
}

// Metrics returns the operator's metrics recorder (package metrics), with
// the Go runtime and process collectors, on the registry of Registry. It is
// made on first use; Options serves it at --metrics-bind-address.
func (f *Flags) Metrics() *metrics.Recorder {
	f.Registry()
	return f.metrics
}

// Registry returns the Prometheus registry that Options serves at
// --metrics-bind-address, for the operator's own collectors. It is made on
// first use, with the collectors of Metrics.
func (f *Flags) Registry() *prometheus.Registry {
	if f.registry == nil {
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg, metrics.WithRuntimeCollectors())
		if err != nil {
			// An empty registry accepts every collector of package metrics.
			panic(fmt.Sprintf("operator: metrics on a new registry: %v", err))
		}
		f.registry, f.metrics = reg, m
	}
	return f.registry
}
