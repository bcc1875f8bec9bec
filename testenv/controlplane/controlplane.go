// Package controlplane starts a real Kubernetes control plane for tests:
// etcd and kube-apiserver, and optionally kube-controller-manager,
// kube-scheduler and kwok with one fake node, all bound to 127.0.0.1 on free
// ports with their state in one directory.
//
// The binaries come from package binaries (built from the Go module proxy
// into a cache shared by every clone and module on the machine). The API
// server authenticates static tokens and authorizes with RBAC, so a test can
// act as the admin, as extra users, or as a ServiceAccount. Every request is
// recorded at Metadata level in an audit log that package audit reads.
//
// A control plane of its own for one test, stopped when the test ends (and
// its component logs printed if the test failed):
//
//	cp := controlplane.StartT(t, controlplane.Options{Size: controlplane.Full})
//	ctx := t.Context()
//	cs, err := kubernetes.NewForConfig(cp.Config())
//
// One for every test of a package: Shared. Outside a test (TestMain, a
// command) use Start and Stop.
//
// # Acting as someone else
//
// Options.Users adds static-token users, each bound to the ClusterRoles it
// names; UserConfig returns a rest.Config for one. ServiceAccountConfig
// creates a ServiceAccount, binds it to ClusterRoles and returns a
// rest.Config authenticated by a token the API server issues for it. A
// ClusterRole may be created after the binding (from the operator's own RBAC
// manifests, with KubectlCommand), so a least-privilege test looks like:
//
//	cfg, err := cp.ServiceAccountConfig(ctx, "foo-system", "foo-controller", "foo-controller")
//	require.NoError(t, err)
//	// run the controller with cfg, then:
//	events, err := cp.AuditEvents()
//	require.NoError(t, err)
//	assert.Zero(t, audit.Count(events, audit.ByUser("system:serviceaccount:foo-system:foo-controller"), audit.ByCode(403)))
package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/binaries"
)

// Size selects the components to run.
type Size int

const (
	// APIServerOnly runs etcd and kube-apiserver: enough for anything the
	// API itself decides (validation, defaulting, subresources, conflicts,
	// RBAC, audit), but no controllers, scheduler or nodes. Without the
	// controller-manager, the aggregated ClusterRoles admin, edit and view
	// have no rules and namespaces get no default ServiceAccount.
	APIServerOnly Size = iota
	// Full adds kube-controller-manager (DefaultControllers), kube-scheduler
	// and kwok with one fake node, so Deployments get Ready pods and garbage
	// collection runs.
	Full
)

func (s Size) String() string {
	switch s {
	case APIServerOnly:
		return "api-server-only"
	case Full:
		return "full"
	}
	return "Size(" + strconv.Itoa(int(s)) + ")"
}

// Component names, as used for log files (<StateDir>/logs/<name>.log) and
// Options.ExtraArgs keys.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kwok                  = "kwok"
)

// User names the control plane authenticates by static token.
const (
	// AdminUser is in system:masters; Config authenticates as this user.
	AdminUser = "admin"
	// ControllerManagerUser is the identity of kube-controller-manager. Its
	// controllers act as their own ServiceAccounts in kube-system
	// (system:serviceaccount:kube-system:deployment-controller, ...).
	ControllerManagerUser = "system:kube-controller-manager"
	// SchedulerUser is the identity of kube-scheduler.
	SchedulerUser = "system:kube-scheduler"
	// KwokUser is the identity of kwok (in system:masters).
	KwokUser = "kwok"
)

// NodeName is the name of the fake node of a Full control plane.
const NodeName = "kwok-node-0"

// NodePodCapacity is the fake node's pod capacity (status.capacity and
// status.allocatable): room for 10,000 Foos of one replica each while the
// pods of an earlier test still terminate.
const NodePodCapacity = 30000

// DefaultControllers are the kube-controller-manager controllers a Full
// control plane runs. The node lifecycle controller is left out on purpose:
// a fake node cannot go wrong, and if it ever missed a lease renewal on a
// busy machine that controller would mark every pod not Ready for good.
var DefaultControllers = []string{
	"garbage-collector-controller",
	"deployment-controller",
	"replicaset-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"namespace-controller",
	"root-ca-certificate-publisher-controller",
	"clusterrole-aggregation-controller",
}

// User is an extra identity the API server accepts by static bearer token.
type User struct {
	// Name is the user name, as RBAC subjects and the audit log see it.
	Name string
	// UID defaults to Name.
	UID string
	// Groups the user is in, in addition to system:authenticated.
	Groups []string
	// Token is the bearer token; generated when empty.
	Token string
	// ClusterRoles are bound to the user cluster-wide before Start returns.
	// A ClusterRole need not exist yet: the binding takes effect once it is
	// created (for instance from the operator's own RBAC manifests).
	ClusterRoles []string
}

// Options configures Start. The zero value starts an APIServerOnly control
// plane in a new temporary directory with binaries from the default cache.
type Options struct {
	// Size selects the components; default APIServerOnly.
	Size Size
	// Binaries locates (and, with BuildMissing, builds) the binaries.
	Binaries binaries.Options
	// BuildMissing builds missing binaries instead of failing. The first
	// build takes many minutes, longer than go test's default timeout.
	BuildMissing bool
	// StateDir holds certificates, tokens, kubeconfigs, etcd data, logs and
	// the audit log. Default: a new temporary directory that Stop removes
	// (StartT keeps it when the test failed). A given directory must be
	// empty or absent; it is created if needed and never removed.
	StateDir string
	// KeepStateDir keeps a temporary StateDir after Stop.
	KeepStateDir bool
	// CRDs are files and directories of CustomResourceDefinitions (see
	// ReadCRDs) to install once the API server is ready, before the other
	// components start (so the garbage collector knows their kinds at
	// once); Start returns after they are Established and served.
	CRDs []string
	// Users are extra static-token identities; see UserConfig.
	Users []User
	// Controllers overrides DefaultControllers (Full only).
	Controllers []string
	// Tracing, when set, runs kube-apiserver with tracing to the OTLP/gRPC
	// endpoint it names (see Tracing).
	Tracing *Tracing
	// ExtraArgs appends flags to a component's command line, keyed by
	// component name (e.g. KubeAPIServer: {"--v=4"}).
	ExtraArgs map[string][]string
	// StartTimeout bounds the start-up, not counting a build of missing
	// binaries; default 2 minutes.
	StartTimeout time.Duration
	// StopGrace is how long each component may take to exit after SIGTERM
	// before its process group is killed; default 5 seconds.
	StopGrace time.Duration
}

// ControlPlane is a running control plane. Its methods are safe for
// concurrent use.
type ControlPlane struct {
	size         Size
	stateDir     string
	removeState  bool
	keepMu       sync.Mutex
	keepState    bool
	stopGrace    time.Duration
	admin        *rest.Config
	kubeconfig   string
	users        map[string]User
	startupTime  time.Duration
	procsMu      sync.Mutex // guards procs and stopped
	procs        []*process
	stopped      bool // Stop has begun; Restart starts nothing more
	stopOnce     sync.Once
	stopErr      error
	apiServerURL string
	testOwned    bool // the state dir is removed by StartT's cleanup
	kubectl      string
}

// maxStartAttempts bounds how often Start tries new ports after one was
// taken by another process.
const maxStartAttempts = 3

// portTaken reports whether a component of the current attempt exited
// because its address was in use.
func (cp *ControlPlane) portTaken() bool {
	for _, p := range cp.processes() {
		if p.exited() && strings.Contains(p.tail(40), "address already in use") {
			return true
		}
	}
	return false
}

// discardAttempt stops the processes of a failed start, sets their logs and
// the audit log aside (as <name>.failed) and removes etcd's data, so that the
// next attempt starts clean.
func (cp *ControlPlane) discardAttempt() error {
	procs := cp.processes()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(cp.stopGrace)
		_ = os.Rename(procs[i].logPath, procs[i].logPath+".failed")
	}
	_ = os.Rename(cp.AuditLogPath(), cp.AuditLogPath()+".failed")
	cp.procsMu.Lock()
	cp.procs = nil
	cp.procsMu.Unlock()
	if err := os.RemoveAll(cp.path("etcd", "data")); err != nil {
		return fmt.Errorf("starting again: %w", err)
	}
	return nil
}

// Start starts a control plane and waits until it is ready: /readyz answers
// ok, and for Full the fake node is Ready, the default ServiceAccount exists
// and controller-manager and scheduler report healthy. CRDs from
// Options.CRDs are installed before it returns. On error everything
// started is stopped again and the error includes the failing component's
// log tail. ctx bounds the start-up only; the processes run until Stop.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	return start(ctx, opts, freePorts)
}

// start is Start with the choice of ports left to pickPorts.
func start(ctx context.Context, opts Options, pickPorts func(n int) ([]int, error)) (_ *ControlPlane, err error) {
	begin := time.Now()
	logger := klog.FromContext(ctx)
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 5 * time.Second
	}
	if opts.Size != APIServerOnly && opts.Size != Full {
		return nil, fmt.Errorf("unknown control plane size %v", opts.Size)
	}
	if opts.Tracing != nil {
		if err := opts.Tracing.validate(); err != nil {
			return nil, fmt.Errorf("controlplane: %w", err)
		}
	}
	var bins binaries.Set
	binOpts := opts.Binaries
	if opts.Size == APIServerOnly && len(binOpts.Only) == 0 {
		// kwok, the scheduler and the controller manager are not needed:
		// neither built nor required.
		binOpts.Only = binaries.APIServerOnly
	}
	if opts.BuildMissing {
		bins, err = binaries.Ensure(ctx, binOpts)
	} else {
		bins, err = binaries.Locate(binOpts)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	cp := &ControlPlane{size: opts.Size, stopGrace: opts.StopGrace, users: map[string]User{}, kubectl: bins.Kubectl}
	if opts.StateDir == "" {
		dir, err := os.MkdirTemp("", "ctrlkit-controlplane-")
		if err != nil {
			return nil, fmt.Errorf("creating state dir: %w", err)
		}
		cp.stateDir, cp.removeState, cp.keepState = dir, true, opts.KeepStateDir
	} else {
		dir, err := filepath.Abs(opts.StateDir)
		if err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
			return nil, fmt.Errorf("state dir %s is not empty", dir)
		}
		cp.stateDir = dir
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s(state kept in %s)", err, cp.failureTails(), cp.stateDir)
			cp.keepStateDir()
			_ = cp.Stop()
		}
	}()
	for _, d := range []string{"logs", "etcd", "apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if err := os.MkdirAll(filepath.Join(cp.stateDir, d), 0o755); err != nil {
			return nil, fmt.Errorf("creating state dir: %w", err)
		}
	}
	logger.V(1).Info("Starting control plane", "size", opts.Size, "stateDir", cp.stateDir)

	// Identities.
	users := []User{
		{Name: AdminUser, Groups: []string{"system:masters"}},
		{Name: ControllerManagerUser},
		{Name: SchedulerUser},
		{Name: KwokUser, Groups: []string{"system:masters"}},
	}
	users = append(users, opts.Users...)
	for i := range users {
		if users[i].Name == "" {
			return nil, errors.New("a user without a name")
		}
		if _, dup := cp.users[users[i].Name]; dup {
			return nil, fmt.Errorf("user %q given twice", users[i].Name)
		}
		if users[i].Token == "" {
			if users[i].Token, err = newToken(); err != nil {
				return nil, err
			}
		}
		cp.users[users[i].Name] = users[i]
	}
	tokenFile := cp.path("apiserver", "tokens.csv")
	if err := writeTokenFile(tokenFile, users); err != nil {
		return nil, err
	}
	saKey, saPub := cp.path("apiserver", "sa.key"), cp.path("apiserver", "sa.pub")
	if err := writeServiceAccountKeys(saKey, saPub); err != nil {
		return nil, err
	}
	policyFile := cp.path("apiserver", "audit-policy.yaml")
	if err := os.WriteFile(policyFile, []byte(auditPolicy), 0o644); err != nil {
		return nil, fmt.Errorf("writing audit policy: %w", err)
	}
	var apiserverArgs []string
	if opts.Tracing != nil {
		tracingFile := cp.path("apiserver", "tracing-config.yaml")
		if err := writeTracingConfig(tracingFile, opts.Tracing); err != nil {
			return nil, err
		}
		apiserverArgs = append(apiserverArgs, "--tracing-config-file="+tracingFile)
	}
	apiserverArgs = append(apiserverArgs, opts.ExtraArgs[KubeAPIServer]...)

	// Free ports are picked here and bound by the components later; a test
	// process starting another control plane at the same moment may take
	// one in between. Such a start is retried on new ports.
	launch := func() error {
		ports, err := pickPorts(5)
		if err != nil {
			return err
		}
		etcdClient, etcdPeer, apiPort, kcmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4]
		env := os.Environ()

		// etcd.
		etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
		etcd, err := cp.start(Etcd, bins.Etcd, append([]string{
			"--name=default",
			"--data-dir=" + cp.path("etcd", "data"),
			"--listen-client-urls=" + etcdURL,
			"--advertise-client-urls=" + etcdURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=default=" + peerURL,
			"--unsafe-no-fsync=true",
			"--log-level=warn",
		}, opts.ExtraArgs[Etcd]...), env)
		if err != nil {
			return err
		}
		if err := waitFor(ctx, "etcd to be healthy", []*process{etcd}, func(ctx context.Context) (bool, error) {
			// The port must be this etcd's, not another test's that took it.
			if err := ownsPort(etcd.pid(), etcdClient); err != nil {
				return false, err
			}
			return httpOK(ctx, etcdURL+"/health")
		}); err != nil {
			return err
		}
		logger.V(1).Info("etcd is healthy", "pid", etcd.pid(), "elapsed", time.Since(begin))

		// kube-apiserver.
		cp.apiServerURL = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
		certDir := cp.path("apiserver", "certs")
		apiserver, err := cp.start(KubeAPIServer, bins.KubeAPIServer, append([]string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(apiPort),
			"--cert-dir=" + certDir,
			"--token-auth-file=" + tokenFile,
			"--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + saPub,
			"--service-account-signing-key-file=" + saKey,
			"--service-cluster-ip-range=10.0.0.0/16",
			// A loopback address must not appear in the kubernetes Service's
			// endpoints; nothing here needs them.
			"--endpoint-reconciler-type=none",
			"--audit-policy-file=" + policyFile,
			"--audit-log-path=" + cp.AuditLogPath(),
			"--audit-log-format=json",
			// Every event is on disk before the response is sent, so a test may
			// read the log right after a request.
			"--audit-log-mode=blocking",
			// No rotation: the audit package reads only the current file, and
			// a size of 0 would mean the 100 MB default.
			"--audit-log-maxsize=100000",
		}, apiserverArgs...), env)
		if err != nil {
			return err
		}
		// The API server writes its self-signed serving certificate (with the CA
		// that signed it) before it listens. It is read again on every attempt
		// in case the first read caught it half written.
		caFile := filepath.Join(certDir, "apiserver.crt")
		if err := waitFor(ctx, "kube-apiserver to be ready", []*process{etcd, apiserver}, func(ctx context.Context) (bool, error) {
			caData, err := os.ReadFile(caFile)
			if err != nil {
				return false, nil
			}
			cp.admin = cp.configFor(cp.users[AdminUser].Token, caData)
			if err := ownsPort(apiserver.pid(), apiPort); err != nil {
				return false, err
			}
			return apiReady(ctx, cp.admin)
		}); err != nil {
			return err
		}
		cp.kubeconfig = cp.path("kubeconfig")
		if err := WriteKubeconfig(cp.kubeconfig, cp.admin, "ctrlkit-testenv"); err != nil {
			return err
		}
		logger.V(1).Info("kube-apiserver is ready", "pid", apiserver.pid(), "url", cp.apiServerURL, "elapsed", time.Since(begin))
		for _, u := range opts.Users {
			subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u.Name}
			if err := cp.bindClusterRoles(ctx, subject, u.ClusterRoles); err != nil {
				return err
			}
		}

		// CRDs go in before kube-controller-manager starts: its garbage
		// collector reads discovery at start-up and then only every 30 seconds,
		// so owners of a kind installed later are not collected until then.
		if len(opts.CRDs) > 0 {
			if err := cp.InstallCRDs(ctx, opts.CRDs...); err != nil {
				return err
			}
		}

		if opts.Size == Full {
			if err := cp.startFull(ctx, opts, bins, caFile, saKey, kcmPort, schedPort, env); err != nil {
				return err
			}
			logger.V(1).Info("Controllers, scheduler and node are ready", "elapsed", time.Since(begin))
		}
		return nil
	}
	for attempt := 1; ; attempt++ {
		err = launch()
		if err == nil {
			break
		}
		if attempt == maxStartAttempts || ctx.Err() != nil || !cp.portTaken() {
			return nil, err
		}
		logger.Info("A port was taken before a component bound it; starting again on new ports", "attempt", attempt, "err", err)
		if discardErr := cp.discardAttempt(); discardErr != nil {
			return nil, errors.Join(err, discardErr)
		}
	}
	cp.startupTime = time.Since(begin)
	logger.V(1).Info("Control plane ready", "size", opts.Size, "elapsed", cp.startupTime, "kubeconfig", cp.kubeconfig)
	return cp, nil
}

func (cp *ControlPlane) startFull(ctx context.Context, opts Options, bins binaries.Set, caFile, saKey string, kcmPort, schedPort int, env []string) error {
	kcmConfig := cp.path(KubeControllerManager, "kubeconfig")
	if err := WriteKubeconfig(kcmConfig, cp.configFor(cp.users[ControllerManagerUser].Token, cp.admin.CAData), KubeControllerManager); err != nil {
		return err
	}
	schedConfig := cp.path(KubeScheduler, "kubeconfig")
	if err := WriteKubeconfig(schedConfig, cp.configFor(cp.users[SchedulerUser].Token, cp.admin.CAData), KubeScheduler); err != nil {
		return err
	}
	kwokConfig := cp.path(Kwok, "kubeconfig")
	if err := WriteKubeconfig(kwokConfig, cp.configFor(cp.users[KwokUser].Token, cp.admin.CAData), Kwok); err != nil {
		return err
	}

	controllers := opts.Controllers
	if len(controllers) == 0 {
		controllers = DefaultControllers
	}
	kcm, err := cp.start(KubeControllerManager, bins.KubeControllerManager, append([]string{
		"--kubeconfig=" + kcmConfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(kcmPort),
		"--cert-dir=" + cp.path(KubeControllerManager, "certs"),
		"--controllers=" + strings.Join(controllers, ","),
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + saKey,
		"--root-ca-file=" + caFile,
		"--leader-elect=false",
		// The default 20 requests/s would make the deployment and replica
		// set controllers, not the controller under test, set the pace of
		// tests with hundreds of objects.
		"--kube-api-qps=300",
		"--kube-api-burst=600",
	}, opts.ExtraArgs[KubeControllerManager]...), env)
	if err != nil {
		return err
	}
	sched, err := cp.start(KubeScheduler, bins.KubeScheduler, append([]string{
		"--kubeconfig=" + schedConfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(schedPort),
		"--cert-dir=" + cp.path(KubeScheduler, "certs"),
		"--leader-elect=false",
		"--kube-api-qps=300",
		"--kube-api-burst=600",
	}, opts.ExtraArgs[KubeScheduler]...), env)
	if err != nil {
		return err
	}

	cs, err := kubernetes.NewForConfig(cp.admin)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	if err := createFakeNode(ctx, cs); err != nil {
		return err
	}
	// kwok reads $HOME/.kwok/kwok.yaml when it exists; give it an empty home
	// so only the stages passed here apply.
	kwokEnv := append(append([]string{}, env...), "HOME="+cp.path(Kwok))
	if _, err := cp.start(Kwok, bins.Kwok, append([]string{
		"--kubeconfig=" + kwokConfig,
		"--config=" + bins.KwokStages,
		"--manage-all-nodes=true",
		// Renew the node's Lease like a kubelet, so the node stays Ready
		// even for a node lifecycle controller enabled through Controllers.
		"--node-lease-duration-seconds=40",
		"--cidr=10.128.0.0/16",
	}, opts.ExtraArgs[Kwok]...), kwokEnv); err != nil {
		return err
	}

	all := cp.processes()
	if err := waitFor(ctx, "the fake node to be Ready", all, func(ctx context.Context) (bool, error) {
		return nodeReady(ctx, cs, NodeName)
	}); err != nil {
		return err
	}
	if err := waitFor(ctx, "kube-controller-manager and kube-scheduler to be healthy", all, func(ctx context.Context) (bool, error) {
		for p, port := range map[*process]int{kcm: kcmPort, sched: schedPort} {
			if err := ownsPort(p.pid(), port); err != nil {
				return false, err
			}
			if ok, err := componentHealthy(ctx, cp.users[AdminUser].Token, port); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	// The ServiceAccount admission plugin rejects pods until the namespace's
	// default ServiceAccount exists; it also shows the controllers run.
	if err := waitFor(ctx, "the default ServiceAccount", all, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}); err != nil {
		return err
	}
	return nil
}

// createFakeNode registers the node kwok plays. The large pod capacity keeps
// many tests in one control plane from running out of room.
func createFakeNode(ctx context.Context, cs kubernetes.Interface) error {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods:   *resource.NewQuantity(NodePodCapacity, resource.DecimalSI),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: NodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": NodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
	created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s: %w", NodeName, err)
	}
	// The TaintNodesByCondition admission plugin gives every new node the
	// not-ready NoSchedule taint; the node lifecycle controller would lift it
	// once the node is Ready, but it does not run here (see
	// DefaultControllers), so the taint goes now.
	if len(created.Spec.Taints) > 0 {
		created.Spec.Taints = nil
		if created, err = cs.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("removing taints of node %s: %w", NodeName, err)
		}
	}
	if created.Status.Allocatable.Pods().Value() != NodePodCapacity {
		created.Status.Capacity, created.Status.Allocatable = res, res
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("setting node %s capacity: %w", NodeName, err)
		}
	}
	return nil
}

// start launches a component and records it for Stop.
func (cp *ControlPlane) start(name, bin string, args, env []string) (*process, error) {
	p, err := startProcess(name, bin, args, env, cp.path("logs"))
	if err != nil {
		return nil, err
	}
	cp.procsMu.Lock()
	cp.procs = append(cp.procs, p)
	cp.procsMu.Unlock()
	return p, nil
}

func (cp *ControlPlane) path(elem ...string) string {
	return filepath.Join(append([]string{cp.stateDir}, elem...)...)
}

func (cp *ControlPlane) configFor(token string, caData []byte) *rest.Config {
	return &rest.Config{
		Host:            cp.apiServerURL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), caData...)},
		QPS:             50,
		Burst:           100,
	}
}

// Size reports the control plane's size.
func (cp *ControlPlane) Size() Size { return cp.size }

// Config returns a new rest.Config for AdminUser (system:masters), with QPS
// 50 and Burst 100. The caller may modify it.
func (cp *ControlPlane) Config() *rest.Config { return rest.CopyConfig(cp.admin) }

// KubeconfigPath is a kubeconfig file for AdminUser.
func (cp *ControlPlane) KubeconfigPath() string { return cp.kubeconfig }

// StateDir is the directory with all files of this control plane.
func (cp *ControlPlane) StateDir() string { return cp.stateDir }

// LogDir holds one <component>.log per process.
func (cp *ControlPlane) LogDir() string { return cp.path("logs") }

// AuditLogPath is the API server's JSON audit log (Metadata level, one
// ResponseComplete event per request); read it with package audit.
func (cp *ControlPlane) AuditLogPath() string { return cp.path("logs", "audit.log") }

// AuditEvents parses the audit log as it is now.
func (cp *ControlPlane) AuditEvents() ([]audit.Event, error) {
	return audit.ReadFile(cp.AuditLogPath())
}

// StartupDuration is how long Start took, including any binary build done
// because of Options.BuildMissing.
func (cp *ControlPlane) StartupDuration() time.Duration { return cp.startupTime }

// Pids returns the process id of every component started, by component
// name. Each is also the id of the component's process group.
func (cp *ControlPlane) Pids() map[string]int {
	procs := cp.processes()
	out := make(map[string]int, len(procs))
	for _, p := range procs {
		out[p.name] = p.pid()
	}
	return out
}

// UserConfig returns a rest.Config authenticating as a user from
// Options.Users (or one of the built-in users above). RBAC grants it nothing
// beyond system:authenticated unless its groups or a binding say so.
func (cp *ControlPlane) UserConfig(name string) (*rest.Config, error) {
	u, ok := cp.users[name]
	if !ok {
		return nil, fmt.Errorf("no static-token user %q", name)
	}
	return cp.configFor(u.Token, cp.admin.CAData), nil
}

// TokenConfig returns a rest.Config that authenticates with a bearer token,
// e.g. one from a TokenRequest.
func (cp *ControlPlane) TokenConfig(token string) *rest.Config {
	return cp.configFor(token, cp.admin.CAData)
}

// ServiceAccountConfig creates the ServiceAccount namespace/name if it does
// not exist (the namespace must exist), binds it to clusterRoles, requests a
// one-hour token for it and returns a rest.Config using that token. The API
// server signs and checks the token itself, so this works for APIServerOnly
// too. The user name the audit log and RBAC see is
// system:serviceaccount:<namespace>:<name>.
func (cp *ControlPlane) ServiceAccountConfig(ctx context.Context, namespace, name string, clusterRoles ...string) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(cp.admin)
	if err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating ServiceAccount %s/%s: %w", namespace, name, err)
	}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
	if err := cp.bindClusterRoles(ctx, subject, clusterRoles); err != nil {
		return nil, err
	}
	expiration := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return cp.TokenConfig(tr.Status.Token), nil
}

// bindClusterRoles binds each ClusterRole to subject with a
// ClusterRoleBinding named ctrlkit-testenv:user:<name>:<role> or
// ctrlkit-testenv:serviceaccount:<namespace>:<name>:<role>. An existing
// binding of that name is kept if it binds the same role to the subject.
func (cp *ControlPlane) bindClusterRoles(ctx context.Context, subject rbacv1.Subject, roles []string) error {
	if len(roles) == 0 {
		return nil
	}
	cs, err := kubernetes.NewForConfig(cp.admin)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	who := "user:" + subject.Name
	if subject.Kind == rbacv1.ServiceAccountKind {
		who = "serviceaccount:" + subject.Namespace + ":" + subject.Name
	}
	for _, role := range roles {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "ctrlkit-testenv:" + who + ":" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{subject},
		}
		_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var existing *rbacv1.ClusterRoleBinding
			existing, err = cs.RbacV1().ClusterRoleBindings().Get(ctx, binding.Name, metav1.GetOptions{})
			if err == nil && (existing.RoleRef != binding.RoleRef || !slices.Contains(existing.Subjects, subject)) {
				err = fmt.Errorf("ClusterRoleBinding %s exists and binds something else", binding.Name)
			}
		}
		if err != nil {
			return fmt.Errorf("binding ClusterRole %s to %s: %w", role, who, err)
		}
	}
	return nil
}

// KubectlCommand returns a kubectl command, built with the other binaries,
// that acts on this control plane as AdminUser (through KubeconfigPath).
// Its discovery cache is in the state directory, not shared with other
// control planes that reuse the same port later. The caller sets its input
// and output and runs it.
func (cp *ControlPlane) KubectlCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, cp.kubectl, append([]string{"--kubeconfig", cp.kubeconfig, "--cache-dir", cp.path("kubectl-cache")}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.kubeconfig)
	return cmd
}

// DumpLogs writes the last lines of every component's log to w.
func (cp *ControlPlane) DumpLogs(w io.Writer, lines int) {
	for _, p := range cp.processes() {
		p.copyTail(w, lines)
	}
}

// failureTails returns the log tails of the components that exited early,
// or, if none did, shorter tails of all of them.
func (cp *ControlPlane) failureTails() string {
	var b strings.Builder
	for _, p := range cp.processes() {
		if p.exited() {
			p.copyTail(&b, 40)
		}
	}
	if b.Len() == 0 {
		cp.DumpLogs(&b, 15)
	}
	return b.String()
}

// Stop stops every component, newest first (SIGTERM to its process group,
// SIGKILL after the grace period) and waits until each process has exited.
// It then removes a temporary state directory, except for a control plane
// from StartT, whose directory goes when the test ends so that a failed
// test can still print the logs. Stop is idempotent; it returns the error
// of removing the state directory, if any.
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		// Components that depend on the API server go first, together.
		var wg sync.WaitGroup
		var core []*process
		for _, p := range cp.stopProcesses() {
			if p.name == Etcd || p.name == KubeAPIServer {
				core = append(core, p)
				continue
			}
			wg.Go(func() { p.stop(cp.stopGrace) })
		}
		wg.Wait()
		for i := len(core) - 1; i >= 0; i-- {
			core[i].stop(cp.stopGrace)
		}
		if !cp.testOwned {
			cp.stopErr = cp.removeStateDir()
		}
	})
	return cp.stopErr
}

// removeStateDir removes a temporary state directory unless it is to be
// kept.
func (cp *ControlPlane) removeStateDir() error {
	cp.keepMu.Lock()
	keep := cp.keepState
	cp.keepMu.Unlock()
	if !cp.removeState || keep {
		return nil
	}
	if err := os.RemoveAll(cp.stateDir); err != nil {
		return fmt.Errorf("removing state dir: %w", err)
	}
	return nil
}

// keepStateDir makes Stop keep a temporary state directory.
func (cp *ControlPlane) keepStateDir() {
	cp.keepMu.Lock()
	cp.keepState = true
	cp.keepMu.Unlock()
}

// waitFor polls cond every 100ms until it returns true. It fails when ctx
// ends (with cond's last error) or when one of procs exits.
func waitFor(ctx context.Context, what string, procs []*process, cond func(context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if p.exited() {
				return false, p.exitError()
			}
		}
		ok, err := cond(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err == nil {
		return nil
	}
	if last != nil && ctx.Err() != nil {
		return fmt.Errorf("waiting for %s: %w (last error: %v)", what, err, last)
	}
	return fmt.Errorf("waiting for %s: %w", what, err)
}

// probeTimeout bounds one readiness request: a port held by something that
// accepts and never answers must not stall the start.
const probeTimeout = 3 * time.Second

func httpOK(ctx context.Context, url string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK, nil
}

func apiReady(ctx context.Context, cfg *rest.Config) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, err
	}
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return false, err
	}
	return string(body) == "ok", nil
}

// componentHealthy asks a component's secure port for /healthz. Each
// component serves a self-signed certificate of its own, so the check skips
// verification; the port is on loopback and the only credential sent is the
// admin token of this throwaway control plane.
func componentHealthy(ctx context.Context, token string, port int) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health check of a test component
	}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("healthz on port %d: %s: %s", port, resp.Status, body)
	}
	return true, nil
}

func nodeReady(ctx context.Context, cs kubernetes.Interface, name string) (bool, error) {
	node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, nil
		}
	}
	return false, nil
}
