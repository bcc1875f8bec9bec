package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

const (
	// shardHeapGoal is the most live heap a replica of three may hold,
	// relative to the one replica that holds every Foo.
	shardHeapGoal = 0.40
	// shardChangeTimeout bounds a join or a kill, until ownership is
	// complete again.
	shardChangeTimeout = 10 * time.Minute
	// shardSettleTimeout bounds how long a replica may take to settle.
	shardSettleTimeout = 5 * time.Minute
)

// BenchmarkShardedConvergence runs examples/foo as one replica and as three
// replicas with --sharded (default timings) on one full control plane,
// each iteration in a fresh namespace with a group of its own; it belongs
// to `make bench-shard`, not `make test`. In each iteration the replicas
// start and see each other, then 32 goroutines create -convergence.foos
// Foos (replicas 1). Reported, as the mean over the iterations:
//
//   - converge-s: from the first create until a watch has seen every Foo
//     converged (see convergenceWatch).
//   - writes/foo and conflicts/foo: the creates, updates, patches and
//     deletes of Foos (not counting their creates), Foo status and
//     Deployments that kube-apiserver counted from the first create until
//     every replica settled, and those of them answered 409, per Foo. The
//     replicas are the only other clients writing these; the goal is 3.
//   - heap-MiB and peak-rss-MiB: the largest live heap (after a garbage
//     collection, from the replica's /debug/pprof) and peak RSS (VmHWM) of
//     any replica once every one has settled and their ownership is
//     complete; the log has each replica's. heap-ratio (three replicas
//     only, after the one-replica run): heap-MiB of the three replicas
//     over that of the one; the goal is at most shardHeapGoal.
//
// With three replicas, once they have settled, a fourth replica joins and
// then the first is killed with SIGKILL. For each of the two changes:
// join-s and kill-s, from the start of the fourth replica or the kill until
// ownership is complete (every live replica sees the live ones as members
// and together they own every Foo, see waitShardOwnership); join-lists and
// kill-lists, the LIST requests (pages) of Foos and Deployments that
// kube-apiserver served from the change until the live replicas settled
// after it, and join-list-MiB and kill-list-MiB the bytes of their
// responses; join-watch-MiB and kill-watch-MiB, the bytes of the watch
// events of Foos and Deployments sent meanwhile (streaming lists count
// there).
func BenchmarkShardedConvergence(b *testing.B) {
	root, err := repo.Root()
	require.NoError(b, err)
	waitBinary := buildInBackground(b, root, "foo", false)
	cp := controlplane.StartT(b, controlplane.Options{
		Size: controlplane.Full, CRDs: []string{filepath.Join(root, "foo", "crd")},
		ExtraArgs: map[string][]string{
			controlplane.KubeControllerManager: kubeClientLimits,
			controlplane.KubeScheduler:         kubeClientLimits,
		},
	})
	e := &shardBench{bin: waitBinary(), foos: *convergenceFoos, admin: unlimited(cp.Config())}
	e.kube, err = kubernetes.NewForConfig(e.admin)
	require.NoError(b, err)
	e.fooClient, err = fooclientset.NewForConfig(e.admin)
	require.NoError(b, err)
	// The replicas run as the admin: this is about throughput, not RBAC
	// (TestSharding runs them with the roles of rbac.yaml).
	e.kubeconfig = cp.KubeconfigPath()
	_, err = e.kube.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: relLeaseNamespace}}, metav1.CreateOptions{})
	require.NoError(b, err)

	var singleHeap float64 // heap-MiB of the one-replica run, once it ran
	for _, replicas := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			b.StopTimer()
			var sum shardBenchResult
			for i := range b.N {
				r := func() shardBenchResult {
					it := &iterationTB{TB: b}
					defer it.done()
					return e.iteration(it, replicas, i)
				}()
				sum.seconds += r.seconds
				sum.requests = sum.requests.add(r.requests)
				sum.maxHeap += r.maxHeap
				sum.maxPeakRSS += r.maxPeakRSS
				sum.join.requests = sum.join.requests.add(r.join.requests)
				sum.join.ownership += r.join.ownership
				sum.kill.requests = sum.kill.requests.add(r.kill.requests)
				sum.kill.ownership += r.kill.ownership
			}
			const mib = 1 << 20
			n := float64(b.N)
			perFoo := n * float64(e.foos)
			heap := float64(sum.maxHeap) / n / mib
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(sum.seconds/n, "converge-s")
			b.ReportMetric(sum.requests.writes/perFoo, "writes/foo")
			b.ReportMetric(sum.requests.conflicts/perFoo, "conflicts/foo")
			b.ReportMetric(heap, "heap-MiB")
			b.ReportMetric(float64(sum.maxPeakRSS)/n/mib, "peak-rss-MiB")
			switch {
			case replicas == 1:
				singleHeap = heap
			case singleHeap > 0:
				ratio := heap / singleHeap
				verdict := "met"
				if ratio > shardHeapGoal {
					verdict = "not met"
				}
				b.Logf("largest live heap of %d replicas %.1f MiB, of one %.1f MiB: ratio %.2f, goal at most %.2f: %s",
					replicas, heap, singleHeap, ratio, shardHeapGoal, verdict)
				b.ReportMetric(ratio, "heap-ratio")
			default:
				b.Logf("no heap-ratio: the one-replica run did not run before")
			}
			if replicas > 1 {
				for _, c := range []struct {
					name string
					c    shardChange
				}{{"join", sum.join}, {"kill", sum.kill}} {
					b.ReportMetric(c.c.ownership.Seconds()/n, c.name+"-s")
					b.ReportMetric(c.c.requests.lists/n, c.name+"-lists")
					b.ReportMetric(c.c.requests.listBytes/n/mib, c.name+"-list-MiB")
					b.ReportMetric(c.c.requests.watchBytes/n/mib, c.name+"-watch-MiB")
				}
			}
		})
	}
}

// shardBench is what the iterations of BenchmarkShardedConvergence share.
type shardBench struct {
	bin, kubeconfig string
	foos            int
	// admin has no client-side rate limit.
	admin     *rest.Config
	kube      kubernetes.Interface
	fooClient fooclientset.Interface
}

// shardBenchResult holds one iteration's figures, or their sum.
type shardBenchResult struct {
	seconds float64
	// requests counts kube-apiserver's requests from the first create
	// until every replica settled.
	requests apiserverCounters
	// maxHeap and maxPeakRSS are the largest live heap and peak RSS of
	// any replica, in bytes, once all settled.
	maxHeap, maxPeakRSS int64
	// join and kill are set with more than one replica.
	join, kill shardChange
}

// shardChange is the cost of one change of a settled group's members.
type shardChange struct {
	// requests counts kube-apiserver's requests from the change until
	// the live replicas settled after it.
	requests apiserverCounters
	// ownership is the time from the change until ownership was complete
	// again.
	ownership time.Duration
}

// startReplica starts replica i of the group ns, with profiles served on
// loopback; it does not wait for it.
func (e *shardBench) startReplica(tb testing.TB, ns string, i int) *process {
	tb.Helper()
	metrics, health, pprof := freeAddress(tb), freeAddress(tb), freeAddress(tb)
	p := startProcess(tb, fmt.Sprintf("%s-%d", ns, i), e.bin, "--kubeconfig="+e.kubeconfig,
		"--metrics-bind-address="+metrics, "--health-probe-bind-address="+health, "--pprof-bind-address="+pprof,
		"--sharded", "--leader-elect-id="+ns, "--leader-elect-namespace="+relLeaseNamespace)
	p.metricsURL, p.healthURL, p.pprofURL = "http://"+metrics, "http://"+health, "http://"+pprof
	return p
}

// counters reads kube-apiserver's request counters.
func (e *shardBench) counters(tb testing.TB) apiserverCounters {
	tb.Helper()
	c, err := readAPIServerCounters(tb.Context(), e.kube)
	require.NoError(tb, err)
	return c
}

// settle waits until every replica has settled and returns their
// reconcile counts.
func settle(tb testing.TB, replicas []*process) []float64 {
	tb.Helper()
	counts := make([]float64, len(replicas))
	for i, p := range replicas {
		counts[i] = waitControllerSettled(tb.Context(), tb, p, 0, shardSettleTimeout).reconciles
	}
	return counts
}

// replicaMemory is one replica's memory at one moment.
type replicaMemory struct {
	heap, peakRSS int64
}

// memory reads the live heap and peak RSS of every replica.
func memory(tb testing.TB, replicas []*process) []replicaMemory {
	tb.Helper()
	out := make([]replicaMemory, len(replicas))
	for i, p := range replicas {
		heap, err := liveHeap(tb.Context(), p.pprofURL)
		require.NoError(tb, err, "live heap of %s", p.name)
		u, err := readUsage(p.cmd.Process.Pid)
		require.NoError(tb, err, "usage of %s", p.name)
		out[i] = replicaMemory{heap, u.peakRSS}
	}
	return out
}

// describeReplicas says, per replica, its reconciles, the keys it owns and
// its memory.
func describeReplicas(reconciles []float64, own shardOwnership, mem []replicaMemory) string {
	parts := make([]string, len(reconciles))
	for i := range reconciles {
		parts[i] = fmt.Sprintf("%.0f reconciles, %.0f of %.0f members, %.0f keys, live heap %.1f MiB, peak RSS %.1f MiB",
			reconciles[i], own.members[i], float64(len(reconciles)), own.owned[i], float64(mem[i].heap)/(1<<20), float64(mem[i].peakRSS)/(1<<20))
	}
	return strings.Join(parts, "; ")
}

// describeRequests summarises the LIST and watch traffic of a change.
func describeRequests(c apiserverCounters) string {
	return fmt.Sprintf("%.0f LIST requests of Foos and Deployments, %.1f MiB listed; %.0f watch events of them, %.1f MiB; %.0f writes",
		c.lists, c.listBytes/(1<<20), c.watchEvents, c.watchBytes/(1<<20), c.writes)
}

// iteration is one iteration with replicas replicas.
func (e *shardBench) iteration(tb testing.TB, replicas, i int) shardBenchResult {
	ctx := tb.Context()
	ns := fmt.Sprintf("shard-%d-%d", replicas, i)
	createNamespace(ctx, tb, e.kube, ns, 15*time.Minute)
	procs := make([]*process, replicas)
	for r := range procs {
		procs[r] = e.startReplica(tb, ns, r)
	}
	for _, p := range procs {
		waitControllerReady(ctx, tb, p)
	}
	// Every replica sees the others before the first Foo: the benchmark
	// measures a settled group, not its start-up.
	waitShardOwnership(ctx, tb, procs, ns, 0, shardChangeTimeout)

	watch := watchConvergence(ctx, tb, e.admin, ns, e.foos, nil)
	before := e.counters(tb)
	start := time.Now()
	require.NoError(tb, runParallel(e.foos, convergenceClients, func(i int) error {
		name := fmt.Sprintf("foo-%d", i)
		_, err := e.fooClient.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, &samplev1alpha1.Foo{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       samplev1alpha1.FooSpec{DeploymentName: name, Replicas: ptr.To[int32](1)},
		}, metav1.CreateOptions{})
		return err
	}))
	converged := watch.wait(tb, time.Hour, allRunning(procs))
	watch.stop()
	reconciles := settle(tb, procs)
	_, own := waitShardOwnership(ctx, tb, procs, ns, e.foos, shardChangeTimeout)
	r := shardBenchResult{seconds: converged.Sub(start).Seconds(), requests: e.counters(tb).sub(before)}
	mem := memory(tb, procs)
	for _, m := range mem {
		r.maxHeap, r.maxPeakRSS = max(r.maxHeap, m.heap), max(r.maxPeakRSS, m.peakRSS)
	}
	tb.Logf("%s: %d Foos converged in %s with %d replicas; until settled, %.2f writes per Foo (%.0f, %.0f of them conflicts); settled: %s",
		ns, e.foos, converged.Sub(start).Round(time.Millisecond), replicas,
		r.requests.writes/float64(e.foos), r.requests.writes, r.requests.conflicts, describeReplicas(reconciles, own, mem))

	if replicas > 1 {
		var joiner *process
		joiner, r.join = e.join(tb, ns, procs, replicas)
		procs = append(procs, joiner)
		procs, r.kill = e.kill(tb, ns, procs, 0)
	}
	for _, p := range procs {
		terminate(tb, p, controllerStopTimeout)
	}
	return r
}

// join starts replica i of the group ns beside the settled replicas live
// and measures the change.
func (e *shardBench) join(tb testing.TB, ns string, live []*process, i int) (*process, shardChange) {
	tb.Helper()
	before := e.counters(tb)
	start := time.Now()
	p := e.startReplica(tb, ns, i)
	waitControllerReady(tb.Context(), tb, p)
	ready := time.Now()
	all := append(live[:len(live):len(live)], p)
	complete, _ := waitShardOwnership(tb.Context(), tb, all, ns, e.foos, shardChangeTimeout)
	reconciles := settle(tb, all)
	c := shardChange{requests: e.counters(tb).sub(before), ownership: complete.Sub(start)}
	_, own := waitShardOwnership(tb.Context(), tb, all, ns, e.foos, shardChangeTimeout)
	tb.Logf("%s: join of %s: ready after %s, ownership complete after %s; %s; settled: %s", ns, p.name,
		ready.Sub(start).Round(time.Millisecond), c.ownership.Round(time.Millisecond), describeRequests(c.requests),
		describeReplicas(reconciles, own, memory(tb, all)))
	return p, c
}

// kill sends SIGKILL to replica victim of the settled replicas live,
// measures the change and returns the survivors.
func (e *shardBench) kill(tb testing.TB, ns string, live []*process, victim int) ([]*process, shardChange) {
	tb.Helper()
	before := e.counters(tb)
	start := time.Now()
	require.NoError(tb, live[victim].cmd.Process.Signal(syscall.SIGKILL))
	<-live[victim].done
	survivors := append(live[:victim:victim], live[victim+1:]...)
	complete, _ := waitShardOwnership(tb.Context(), tb, survivors, ns, e.foos, shardChangeTimeout)
	reconciles := settle(tb, survivors)
	c := shardChange{requests: e.counters(tb).sub(before), ownership: complete.Sub(start)}
	_, own := waitShardOwnership(tb.Context(), tb, survivors, ns, e.foos, shardChangeTimeout)
	tb.Logf("%s: kill -9 of %s: ownership complete after %s; %s; settled: %s", ns, live[victim].name,
		c.ownership.Round(time.Millisecond), describeRequests(c.requests), describeReplicas(reconciles, own, memory(tb, survivors)))
	return survivors, c
}

// allRunning returns a health check for convergenceWatch.wait that fails
// once one of the processes exits.
func allRunning(procs []*process) func() error {
	return func() error {
		for _, p := range procs {
			if err := running(p)(); err != nil {
				return err
			}
		}
		return nil
	}
}
