package e2e

// BenchmarkConvergence: how long the examples/foo binary takes to bring
// 1,000 new Foos to their end state on a full control plane, how many
// writes that costs, and how long the API server and kube controllers alone
// need to reach the same end state (the floor).
//
// Run it from the testenv module (bench.sh beside this file runs it
// five times and writes a markdown report):
//
//	go test -run '^$' -bench Convergence -benchtime 1x -count 5 -timeout 3h ./e2e/
//
// Under plain `go test` it does not run.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

var (
	convergenceFoos = flag.Int("convergence.foos", 1000,
		"number of Foos each iteration of BenchmarkConvergence creates")
	convergenceResync = flag.Duration("convergence.resync", 30*time.Second,
		"--resync of the restarted controller whose idle resync BenchmarkConvergence measures")
	convergenceControllerArgs = flag.String("convergence.controller-args", "",
		"extra flags for the controller, separated by spaces, for experiments (the benchmark proper runs it with its defaults)")
	convergenceProfileDir = flag.String("convergence.profile-dir", "",
		"if set, a directory where each controller peer's iteration saves CPU profiles of the controller and of kube-apiserver, taken from the first create on, and the controller's heap profile once it has settled")
	convergenceProfileSeconds = flag.Int("convergence.profile-seconds", 20,
		"length of the CPU profiles of -convergence.profile-dir")
)

const (
	// convergenceClients is how many goroutines create the Foos (and, for
	// the floor, write the Deployments and statuses).
	convergenceClients = 32
	// convergenceReplicas is spec.replicas of every Foo.
	convergenceReplicas = 1
	// benchControllerUser is the static-token identity of the controller,
	// bound to the ClusterRole of examples/foo/deploy.
	benchControllerUser = "foo-controller-bench"
	// benchCRUser is the identity of the controller-runtime peer, bound to
	// the same ClusterRole and to events.k8s.io events, which its manager's
	// recorder writes instead of core/v1 ones.
	benchCRUser = "foo-controller-cr-bench"

	namespaceDeleteTimeout = 10 * time.Minute
	// controllerStopTimeout covers the binary's default --shutdown-timeout
	// (30s).
	controllerStopTimeout = 45 * time.Second
)

// convergeTimeout bounds one iteration's convergence of foos Foos: 10
// minutes and 120 ms a Foo, 30 minutes at 10,000, where on a slow machine
// of this project's kind controller-runtime's twin had converged 8,821
// after 15.
func convergeTimeout(foos int) time.Duration {
	return 10*time.Minute + time.Duration(foos)*120*time.Millisecond
}

// kubeClientLimits lifts the client-side rate limits of
// kube-controller-manager and kube-scheduler (20 and 50 requests per second
// by default) to those of the Foo controller, so that the deployment and
// replica set controllers do not set the pace of both peers alike.
var kubeClientLimits = []string{"--kube-api-qps=500", "--kube-api-burst=1000"}

// BenchmarkConvergence runs benchmark 3 (impl=ctrlkit, and the same
// controller written with controller-runtime, impl=controller-runtime) and
// its floor, benchmark 5 (impl=apiserver-floor), on one full control plane
// shared by every iteration. Each iteration uses a new namespace and waits until it is
// deleted again.
//
// impl=ctrlkit: the examples/foo binary runs with its default flags (apart
// from kubeconfig and ports) as its own user; 32 goroutines of an admin
// client create the Foos. Reported per iteration: converge-s, from the
// first create until every Foo has converged (see convergenceWatch); the
// controller's write requests per Foo from the first create until it was
// stopped after settling: Deployment creates, Foo status updates, other
// Foo or Deployment writes, all of them together (writes/foo, the goal is
// at most 3), Events on their own (events/foo) and with the rest
// (total-writes/foo), the most object writes for any one Foo (max-writes),
// 409 answers (conflicts/foo); api-writes/foo, the writes of every client
// in the namespace until convergence. Then the binary is restarted with
// --resync=-convergence.resync: restart-writes counts its writes until it
// has reconciled every Foo once and settled, idle-writes its writes during
// the following resync period (at least one period long, and until every
// Foo has been reconciled again by the resync). Both goals are 0.
//
// impl=controller-runtime: bench/cmd/crfoo, measured the same way, as a
// user of its own with the same ClusterRole plus events.k8s.io Events.
//
// impl=apiserver-floor: no controller; the same 32 goroutines create each
// Foo and then its Deployment (with the controller owner reference and the
// template the controller would use), and as soon as a Deployment is
// available one status update mirrors it into its Foo. That is the least
// work that reaches the same end state.
func BenchmarkConvergence(b *testing.B) {
	root, err := repo.Root()
	require.NoError(b, err)
	waitBinary := buildInBackground(b, root, "foo", false)
	crDir := b.TempDir()
	crBuilt := make(chan error, 1)
	go func() { crBuilt <- buildBenchCommand(b.Context(), root, crDir, "crfoo") }()
	cp := controlplane.StartT(b, controlplane.Options{
		Size: controlplane.Full,
		CRDs: []string{filepath.Join(root, "foo", "crd")},
		Users: []controlplane.User{
			{Name: benchControllerUser},
			{Name: benchCRUser, ClusterRoles: []string{"events.k8s.io-writer"}},
		},
		ExtraArgs: map[string][]string{
			controlplane.KubeControllerManager: kubeClientLimits,
			controlplane.KubeScheduler:         kubeClientLimits,
		},
	})
	bin := waitBinary()
	require.NoError(b, <-crBuilt)

	e := &convergenceEnv{cp: cp, foos: *convergenceFoos, admin: unlimited(cp.Config())}
	e.kube, err = kubernetes.NewForConfig(e.admin)
	require.NoError(b, err)
	e.fooClient, err = fooclientset.NewForConfig(e.admin)
	require.NoError(b, err)
	_, err = e.kube.RbacV1().ClusterRoles().Create(b.Context(), &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "events.k8s.io-writer"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}}},
	}, metav1.CreateOptions{})
	require.NoError(b, err)
	peers := []controllerPeer{
		{impl: "ctrlkit", bin: bin, user: benchControllerUser, controller: foo.ControllerName},
		// Everything in JSON, as before protobuf was the default.
		{impl: "ctrlkit-json", bin: bin, user: benchControllerUser, controller: foo.ControllerName,
			args: []string{"--kube-api-content-type=application/json"}},
		// Its caches as controller-runtime's defaults make them: without
		// managedFields, like ctrlkit's.
		{impl: "controller-runtime", bin: filepath.Join(crDir, "crfoo"), user: benchCRUser, controller: "foo"},
	}
	if *convergenceProfileDir != "" {
		require.NoError(b, os.MkdirAll(*convergenceProfileDir, 0o755))
		e.profiler = &profiler{dir: *convergenceProfileDir, seconds: *convergenceProfileSeconds, kube: e.kube}
	}
	kubeconfigs := map[string]string{} // by user: two peers may share one
	for i, p := range peers {
		if kubeconfigs[p.user] == "" {
			cfg, err := cp.UserConfig(p.user)
			require.NoError(b, err)
			grantControllerRole(b.Context(), b, e.kube, root, p.user, cfg)
			kubeconfigs[p.user] = writeUserKubeconfig(b, cfg, p.user, b.TempDir())
		}
		peers[i].kubeconfig = kubeconfigs[p.user]
	}
	e.warmUp(b)

	for _, p := range peers {
		b.Run("impl="+p.impl, func(b *testing.B) { e.run(b, e.controllerIteration(p)) })
	}
	b.Run("impl=apiserver-floor", func(b *testing.B) { e.run(b, e.floorIteration) })
}

// controllerPeer is a Foo controller binary, its flags beyond the defaults,
// and the identity it runs as.
type controllerPeer struct {
	impl, bin, user, kubeconfig string
	args                        []string
	// controller is the "controller" label of its metrics.
	controller string
}

// buildBenchCommand builds testenv/bench/cmd/<name> into dir.
func buildBenchCommand(ctx context.Context, root, dir, name string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, name), "./cmd/"+name)
	cmd.Dir = filepath.Join(root, "testenv", "bench")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/%s: %w\n%s", name, err, out)
	}
	return nil
}

// convergenceEnv is what the iterations of BenchmarkConvergence share.
type convergenceEnv struct {
	cp   *controlplane.ControlPlane
	foos int
	// admin has no client-side rate limit.
	admin     *rest.Config
	kube      kubernetes.Interface
	fooClient fooclientset.Interface

	// setup says how long the control plane and the warm-up took.
	setup string
	// profiler, if set, profiles each controller peer's convergence.
	profiler *profiler

	mu         sync.Mutex
	iterations int
}

// convergenceResult holds one iteration's figures, or their sum.
type convergenceResult struct {
	seconds float64
	writes  writeCounts
	// apiWrites counts every write in the namespace until convergence.
	apiWrites int
	// lateWrites are object writes after convergence.
	lateWrites int
	// restartWrites and idleWrites are set for controller peers only.
	restartWrites, idleWrites int
	withIdle                  bool
	// The controller process's CPU seconds from the first create until it
	// settled, its peak RSS and its live heap after settling (bytes), and
	// its CPU seconds in one resync period of the idle phase.
	cpuSeconds, idleCPUSeconds float64
	peakRSS, liveHeap          int64
	// apiserverCPUSeconds is kube-apiserver's CPU time from the first
	// create until convergence, set for every peer.
	apiserverCPUSeconds float64
}

// run runs b.N iterations, each with its own cleanup, and reports the mean
// of their figures (with -benchtime 1x: the iteration's own).
func (e *convergenceEnv) run(b *testing.B, iteration func(*testing.B, testing.TB) convergenceResult) {
	b.StopTimer()
	b.Log(e.setup)
	var sum convergenceResult
	for range b.N {
		r := func() convergenceResult {
			it := &iterationTB{TB: b}
			defer it.done()
			return iteration(b, it)
		}()
		sum.seconds += r.seconds
		sum.writes.deploymentCreates += r.writes.deploymentCreates
		sum.writes.statusUpdates += r.writes.statusUpdates
		sum.writes.otherObjectWrites += r.writes.otherObjectWrites
		sum.writes.events += r.writes.events
		sum.writes.conflicts += r.writes.conflicts
		sum.writes.otherFailures += r.writes.otherFailures
		sum.writes.maxPerFoo = max(sum.writes.maxPerFoo, r.writes.maxPerFoo)
		sum.apiWrites += r.apiWrites
		sum.lateWrites += r.lateWrites
		sum.restartWrites += r.restartWrites
		sum.idleWrites += r.idleWrites
		sum.withIdle = r.withIdle
		sum.cpuSeconds += r.cpuSeconds
		sum.idleCPUSeconds += r.idleCPUSeconds
		sum.peakRSS += r.peakRSS
		sum.liveHeap += r.liveHeap
		sum.apiserverCPUSeconds += r.apiserverCPUSeconds
	}
	n := float64(b.N)
	perFoo := n * float64(e.foos)
	// The timer only ran from the first create to convergence; converge-s
	// says the same in a unit that fits the magnitude.
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(sum.seconds/n, "converge-s")
	b.ReportMetric(float64(sum.writes.objectWrites())/perFoo, "writes/foo")
	b.ReportMetric(float64(sum.writes.deploymentCreates)/perFoo, "deploy-creates/foo")
	b.ReportMetric(float64(sum.writes.statusUpdates)/perFoo, "status-updates/foo")
	b.ReportMetric(float64(sum.writes.otherObjectWrites)/perFoo, "other-writes/foo")
	b.ReportMetric(float64(sum.writes.events)/perFoo, "events/foo")
	b.ReportMetric(float64(sum.writes.objectWrites()+sum.writes.events)/perFoo, "total-writes/foo")
	b.ReportMetric(float64(sum.writes.maxPerFoo), "max-writes")
	b.ReportMetric(float64(sum.writes.conflicts)/perFoo, "conflicts/foo")
	b.ReportMetric(float64(sum.apiWrites)/perFoo, "api-writes/foo")
	b.ReportMetric(sum.apiserverCPUSeconds/n, "apiserver-cpu-s")
	if sum.withIdle {
		b.ReportMetric(float64(sum.restartWrites)/n, "restart-writes")
		b.ReportMetric(float64(sum.idleWrites)/n, "idle-writes")
		const mib = 1 << 20
		b.ReportMetric(sum.cpuSeconds/n, "cpu-s")
		b.ReportMetric(float64(sum.peakRSS)/n/mib, "peak-rss-MiB")
		b.ReportMetric(float64(sum.liveHeap)/n/mib, "heap-MiB")
		b.ReportMetric(sum.idleCPUSeconds/n, "idle-cpu-s")
	}
}

// namespace returns a new namespace name for an iteration of impl.
func (e *convergenceEnv) namespace(impl string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.iterations++
	return fmt.Sprintf("bench-%s-%d", impl, e.iterations)
}

// warmUp takes a few Foos through what the floor does, so that the first
// iteration does not pay for what the API server sets up on the first
// write of a kind (in a loaded run, seconds for the Foo CRD).
func (e *convergenceEnv) warmUp(b *testing.B) {
	it := &iterationTB{TB: b}
	defer it.done()
	saved := e.foos
	e.foos = convergenceClients
	defer func() { e.foos = saved }()
	begin := time.Now()
	e.floorIteration(b, it)
	b.StopTimer()
	e.setup = fmt.Sprintf("control plane started in %s, warm-up with %d Foos took %s",
		e.cp.StartupDuration().Round(time.Millisecond), convergenceClients, time.Since(begin).Round(time.Millisecond))
}

// startController runs the peer's binary with its default flags apart from
// the kubeconfig, the ports (profiles served on loopback), the peer's own
// flags and extra.
func (e *convergenceEnv) startController(tb testing.TB, peer controllerPeer, name string, extra ...string) *process {
	tb.Helper()
	metrics, health, pprof := freeAddress(tb), freeAddress(tb), freeAddress(tb)
	args := append([]string{
		"--kubeconfig=" + peer.kubeconfig,
		"--metrics-bind-address=" + metrics,
		"--health-probe-bind-address=" + health,
		"--pprof-bind-address=" + pprof,
	}, peer.args...)
	args = append(append(args, strings.Fields(*convergenceControllerArgs)...), extra...)
	p := startProcess(tb, name, peer.bin, args...)
	p.metricsURL, p.healthURL, p.pprofURL, p.controller = "http://"+metrics, "http://"+health, "http://"+pprof, peer.controller
	waitControllerReady(tb.Context(), tb, p)
	return p
}

// newBenchFoo is the i-th Foo of an iteration.
func newBenchFoo(i int) *samplev1alpha1.Foo {
	name := fmt.Sprintf("foo-%04d", i)
	return &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: name, Replicas: ptr.To[int32](convergenceReplicas)},
	}
}

// createFoos creates the Foos from convergenceClients goroutines; then, if
// set, runs in the same goroutine right after each create.
func (e *convergenceEnv) createFoos(ctx context.Context, namespace string, then func(context.Context, *samplev1alpha1.Foo) error) error {
	return runParallel(e.foos, convergenceClients, func(i int) error {
		f, err := e.fooClient.SamplecontrollerV1alpha1().Foos(namespace).Create(ctx, newBenchFoo(i), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating Foo %d: %w", i, err)
		}
		if then != nil {
			return then(ctx, f)
		}
		return nil
	})
}

// controllerIteration is one iteration of a controller peer.
func (e *convergenceEnv) controllerIteration(peer controllerPeer) func(*testing.B, testing.TB) convergenceResult {
	return func(b *testing.B, tb testing.TB) convergenceResult { return e.peerIteration(b, tb, peer) }
}

func (e *convergenceEnv) peerIteration(b *testing.B, tb testing.TB, peer controllerPeer) convergenceResult {
	ctx := tb.Context()
	ns := e.namespace(peer.impl)
	createNamespace(ctx, tb, e.kube, ns, namespaceDeleteTimeout)
	watch := watchConvergence(ctx, tb, e.admin, ns, e.foos, nil)
	ctrl := e.startController(tb, peer, peer.impl+" foo controller")
	offset := auditSize(tb, e.cp.AuditLogPath())

	pid := ctrl.cmd.Process.Pid
	atStart, err := readUsage(pid)
	require.NoError(tb, err)
	apiserverAtStart := e.apiserverCPU(tb)

	b.StartTimer()
	start := time.Now()
	profiled := func() error { return nil }
	if e.profiler != nil {
		profiled = e.profiler.start(ctx, ns, ctrl.pprofURL)
	}
	require.NoError(tb, e.createFoos(ctx, ns, nil))
	created := time.Now()
	convergedAt := watch.wait(tb, convergeTimeout(e.foos), running(ctrl))
	b.StopTimer()
	apiserverCPU := e.apiserverCPU(tb) - apiserverAtStart
	watch.stop()

	// Let the controller finish what it does after convergence (events
	// are sent asynchronously), then stop it: every write of the first
	// sync is in the audit log once it has exited.
	waitControllerSettled(ctx, tb, ctrl, float64(e.foos), 5*time.Minute)
	settledUsage, err := readUsage(pid)
	require.NoError(tb, err)
	heap, err := liveHeap(ctx, ctrl.pprofURL)
	require.NoError(tb, err)
	require.NoError(tb, profiled(), "CPU profiles")
	if e.profiler != nil {
		require.NoError(tb, e.profiler.saveHeap(ctx, ns, ctrl.pprofURL))
	}
	terminate(tb, ctrl, controllerStopTimeout)

	// The idle phase: a restart (its initial list reconciles every Foo)
	// and one resync period.
	restartAt := time.Now()
	resync := *convergenceResync
	again := e.startController(tb, peer, peer.impl+" foo controller, restarted", "--resync="+resync.String())
	settled := waitControllerSettled(ctx, tb, again, float64(e.foos), 5*time.Minute)
	idleStart := time.Now()
	idleFrom, err := readUsage(again.cmd.Process.Pid)
	require.NoError(tb, err)
	var last controllerState
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*resync+5*time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := readControllerState(ctx, again)
		if err != nil {
			return false, nil
		}
		last = s
		return time.Since(idleStart) >= resync && s.reconciles >= settled.reconciles+float64(e.foos), nil
	})
	require.NoError(tb, err, "a resync reconciles every Foo again within the timeout (last state %+v, before %+v)", last, settled)
	final := waitControllerSettled(ctx, tb, again, settled.reconciles+float64(e.foos), 5*time.Minute)
	idleEnd := time.Now()
	idleTo, err := readUsage(again.cmd.Process.Pid)
	require.NoError(tb, err)
	terminate(tb, again, controllerStopTimeout)

	events := auditFrom(tb, e.cp.AuditLogPath(), offset)
	byController := []audit.Filter{audit.ByUser(peer.user), audit.Writes()}
	firstSync := audit.Select(events, append(byController, audit.Since(start), before(restartAt))...)
	late := audit.Select(firstSync, audit.Since(convergedAt), func(e audit.Event) bool { return e.Resource != "events" })
	restart := audit.Select(events, append(byController, audit.Since(restartAt), before(idleStart))...)
	idle := audit.Select(events, append(byController, audit.Since(idleStart))...)
	api := audit.Select(events, audit.Writes(), audit.ByNamespace(ns), audit.Since(start), before(convergedAt))

	r := convergenceResult{
		seconds:             convergedAt.Sub(start).Seconds(),
		writes:              countWrites(firstSync),
		apiWrites:           len(api),
		lateWrites:          len(late),
		restartWrites:       len(restart),
		idleWrites:          len(idle),
		withIdle:            true,
		cpuSeconds:          (settledUsage.cpu - atStart.cpu).Seconds(),
		apiserverCPUSeconds: apiserverCPU.Seconds(),
		peakRSS:             settledUsage.peakRSS,
		liveHeap:            heap,
		// The idle window is at least one resync period: scaled to one.
		idleCPUSeconds: (idleTo.cpu - idleFrom.cpu).Seconds() * resync.Seconds() / idleEnd.Sub(idleStart).Seconds(),
	}
	tb.Logf("%s: %d Foos created in %s, converged after %s; controller's first sync: %d writes (%s), %d Foo or Deployment writes after convergence",
		ns, e.foos, created.Sub(start).Round(time.Millisecond), convergedAt.Sub(start).Round(time.Millisecond),
		len(firstSync), audit.FormatTally(audit.Tally(firstSync)), len(late))
	tb.Logf("%s: restart: %.0f reconciles in %s, %d writes (%s); idle for %s with %.0f reconciles (resync %s): %d writes (%s)",
		ns, settled.reconciles, idleStart.Sub(restartAt).Round(time.Millisecond), len(restart), audit.FormatTally(audit.Tally(restart)),
		idleEnd.Sub(idleStart).Round(time.Millisecond), final.reconciles-settled.reconciles, resync, len(idle), audit.FormatTally(audit.Tally(idle)))
	tb.Logf("%s: controller CPU %.1fs until settled, peak RSS %d MiB, live heap %d MiB; idle CPU %.2fs in %s; kube-apiserver CPU %.1fs until convergence",
		ns, r.cpuSeconds, r.peakRSS>>20, r.liveHeap>>20, (idleTo.cpu - idleFrom.cpu).Seconds(), idleEnd.Sub(idleStart).Round(time.Millisecond), r.apiserverCPUSeconds)
	tb.Logf("%s: writes in the namespace until convergence, by user, verb and resource (count, first-last): %s", ns, timeline(api, start))
	return r
}

// availableDeployment is a Deployment the floor saw available.
type availableDeployment struct {
	name      string
	available int32
}

func (e *convergenceEnv) floorIteration(b *testing.B, tb testing.TB) convergenceResult {
	ctx := tb.Context()
	ns := e.namespace("floor")
	createNamespace(ctx, tb, e.kube, ns, namespaceDeleteTimeout)

	var created, sent sync.Map // Foo name -> *Foo as created; -> true once queued
	// Each Deployment is queued at most once, so the buffer never fills.
	available := make(chan availableDeployment, e.foos)
	watch := watchConvergence(ctx, tb, e.admin, ns, e.foos, func(d *appsv1.Deployment) {
		if _, dup := sent.LoadOrStore(d.Name, true); !dup {
			available <- availableDeployment{d.Name, d.Status.AvailableReplicas}
		}
	})
	offset := auditSize(tb, e.cp.AuditLogPath())

	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	var (
		workers   sync.WaitGroup
		errMu     sync.Mutex
		statusErr error
	)
	apiserverAtStart := e.apiserverCPU(tb)
	b.StartTimer()
	start := time.Now()
	for range convergenceClients {
		workers.Go(func() {
			for {
				select {
				case <-workCtx.Done():
					return
				case d := <-available:
					if err := e.mirrorStatus(workCtx, ns, d, &created); err != nil && workCtx.Err() == nil {
						errMu.Lock()
						statusErr = err
						errMu.Unlock()
					}
				}
			}
		})
	}
	err := e.createFoos(ctx, ns, func(ctx context.Context, f *samplev1alpha1.Foo) error {
		created.Store(f.Name, f)
		if _, err := e.kube.AppsV1().Deployments(ns).Create(ctx, floorDeployment(f), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Deployment %s: %w", f.Name, err)
		}
		return nil
	})
	require.NoError(tb, err)
	createdAt := time.Now()
	convergedAt := watch.wait(tb, convergeTimeout(e.foos), func() error {
		errMu.Lock()
		defer errMu.Unlock()
		return statusErr
	})
	b.StopTimer()
	apiserverCPU := e.apiserverCPU(tb) - apiserverAtStart
	stopWork()
	workers.Wait()
	watch.stop()
	end := time.Now()

	events := auditFrom(tb, e.cp.AuditLogPath(), offset)
	isFooCreate := func(e audit.Event) bool { return e.Resource == "foos" && e.Subresource == "" && e.Verb == "create" }
	floor := audit.Select(events, audit.ByUser(controlplane.AdminUser), audit.Writes(), audit.ByNamespace(ns),
		audit.Since(start), before(end), func(e audit.Event) bool { return !isFooCreate(e) })
	api := audit.Select(events, audit.Writes(), audit.ByNamespace(ns), audit.Since(start), before(convergedAt))
	tb.Logf("%s: %d Foos and Deployments created in %s, converged after %s; the floor's writes besides the Foo creates: %d (%s)",
		ns, e.foos, createdAt.Sub(start).Round(time.Millisecond), convergedAt.Sub(start).Round(time.Millisecond),
		len(floor), audit.FormatTally(audit.Tally(floor)))
	tb.Logf("%s: writes in the namespace until convergence, by user, verb and resource (count, first-last): %s", ns, timeline(api, start))
	return convergenceResult{
		seconds:             convergedAt.Sub(start).Seconds(),
		writes:              countWrites(floor),
		apiWrites:           len(api),
		apiserverCPUSeconds: apiserverCPU.Seconds(),
	}
}

// apiserverCPU is kube-apiserver's CPU time so far.
func (e *convergenceEnv) apiserverCPU(tb testing.TB) time.Duration {
	tb.Helper()
	u, err := readUsage(e.cp.Pids()[controlplane.KubeAPIServer])
	require.NoError(tb, err)
	return u.cpu
}

// mirrorStatus writes the status the controller would write for an
// available Deployment, based on the Foo as created (nobody else writes
// it, so its resourceVersion is current).
func (e *convergenceEnv) mirrorStatus(ctx context.Context, namespace string, d availableDeployment, created *sync.Map) error {
	obj, ok := created.Load(d.name)
	if !ok {
		return fmt.Errorf("deployment %s is not one of the floor's", d.name)
	}
	f := obj.(*samplev1alpha1.Foo).DeepCopy()
	want := *f.Spec.Replicas
	f.Status = samplev1alpha1.FooStatus{AvailableReplicas: d.available, ObservedGeneration: f.Generation}
	meta.SetStatusCondition(&f.Status.Conditions, metav1.Condition{
		Type:               samplev1alpha1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             samplev1alpha1.ReasonDeploymentReady,
		Message:            fmt.Sprintf("Deployment %q has %d of %d replicas available", d.name, d.available, want),
		ObservedGeneration: f.Generation,
	})
	if _, err := e.fooClient.SamplecontrollerV1alpha1().Foos(namespace).UpdateStatus(ctx, f, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating status of Foo %s: %w", d.name, err)
	}
	return nil
}

// floorDeployment is the Deployment the controller creates for f: the same
// labels, selector, template and controller owner reference.
func floorDeployment(f *samplev1alpha1.Foo) *appsv1.Deployment {
	labels := map[string]string{"app": "nginx", "controller": f.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            f.Spec.DeploymentName,
			Namespace:       f.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(f, samplev1alpha1.SchemeGroupVersion.WithKind("Foo"))},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: f.Spec.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}},
			},
		},
	}
}
