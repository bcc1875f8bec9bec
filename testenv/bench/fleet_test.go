package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// fleetProvider hands the Fleet's Members to the benchmark.
type fleetProvider struct{ members chan multicluster.Members }

func (p fleetProvider) Run(ctx context.Context, m multicluster.Members) error {
	p.members <- m
	<-ctx.Done()
	return nil
}

// memberClients are fake member clusters by name, each holding n
// ConfigMaps with size bytes of data. Their lists are encoded and decoded
// again, so that the cached objects own their strings as they would
// coming from an API server.
func memberClients(names []string, n, size int) map[string]*fake.Clientset {
	clients := map[string]*fake.Clientset{}
	data := strings.Repeat("x", size)
	for _, name := range names {
		objs := make([]runtime.Object, 0, n)
		for i := range n {
			objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: fmt.Sprintf("cm-%05d", i)},
				Data: map[string]string{"data": data}})
		}
		c := fake.NewClientset(objs...)
		c.PrependReactor("list", "configmaps", decodingListReactor(c.Tracker(), kubescheme.Scheme, kubescheme.Codecs))
		clients[name] = c
	}
	return clients
}

// runningFleet is a fleet whose one controller reconciles every ConfigMap
// of its members.
type runningFleet struct {
	fleet   *multicluster.Fleet[struct{}]
	ctrl    *queue.Controller[multicluster.Key]
	members multicluster.Members
	stop    func()
}

func startBenchFleet(b *testing.B, clients map[string]*fake.Clientset, r multicluster.ReconcileFunc[struct{}], fleetOpts []multicluster.Option, opts ...queue.Option) *runningFleet {
	p := fleetProvider{members: make(chan multicluster.Members, 1)}
	var ctrl *queue.Controller[multicluster.Key]
	engage := func(_ context.Context, cl *multicluster.Cluster) (struct{}, error) {
		_, err := cl.Informers.Core().V1().ConfigMaps().TypedInformer().AddTypedEventHandler(
			informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(ctrl)), cache.HandlerOptions{})
		return struct{}{}, err
	}
	newClient := func(_ context.Context, name string, _ *rest.Config) (kubernetes.Interface, error) {
		return clients[name], nil
	}
	fleet, err := multicluster.New("bench", p, engage, append([]multicluster.Option{multicluster.WithClients(newClient)}, fleetOpts...)...)
	if err != nil {
		b.Fatal(err)
	}
	if ctrl, err = multicluster.NewController(fleet, "bench", r, opts...); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(quietContext())
	var wg sync.WaitGroup
	wg.Go(func() { _ = fleet.Run(ctx) })
	wg.Go(func() { _ = ctrl.Run(ctx) })
	return &runningFleet{fleet: fleet, ctrl: ctrl, members: <-p.members, stop: func() { cancel(); wg.Wait() }}
}

// quietContext is a context whose logger discards everything, as every
// peer of these benchmarks logs nothing.
func quietContext() context.Context { return klog.NewContext(context.Background(), logr.Discard()) }

// waitFor polls cond every millisecond for up to a minute.
func waitFor(b *testing.B, what string, cond func() bool) {
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(time.Millisecond) // polling
	}
}

// BenchmarkFleetFairness measures how long a quiet cluster that joins waits
// for its first reconcile while a busy cluster that joined just before it
// has 10,000 keys of its initial list queued. 4 workers; every reconcile
// takes 1ms (an API call's latency), so the busy backlog alone takes 2.5s.
// Peers: queue=fair is multicluster.NewController as it is; queue=one is
// the same with every key in one fairness group, as one plain queue would
// serve them.
func BenchmarkFleetFairness(b *testing.B) {
	const backlog = 10_000
	clients := memberClients([]string{"busy"}, backlog, 16)
	clients["quiet"] = fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "quiet"}})
	for _, peer := range []struct {
		name string
		opts []queue.Option
	}{
		{name: "fair"},
		{name: "one", opts: []queue.Option{queue.WithFairness(func(multicluster.Key) string { return "" })}},
	} {
		b.Run("queue="+peer.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				var (
					mu    sync.Mutex
					first time.Time
				)
				quietDone := make(chan struct{})
				r := func(ctx context.Context, _ struct{}, key multicluster.Key) (reconcile.Result, error) {
					if key.Cluster == "quiet" {
						mu.Lock()
						if first.IsZero() {
							first = time.Now()
							close(quietDone)
						}
						mu.Unlock()
						return reconcile.Result{}, nil
					}
					select {
					case <-time.After(time.Millisecond): // the API call of a reconcile
					case <-ctx.Done():
					}
					return reconcile.Result{}, nil
				}
				f := startBenchFleet(b, clients, r, nil, append([]queue.Option{queue.WithWorkers(4)}, peer.opts...)...)
				f.members.Set("busy", &rest.Config{Host: "https://busy"})
				waitFor(b, "the busy backlog", func() bool { return f.ctrl.Len() >= backlog-100 })
				joined := time.Now()
				f.members.Set("quiet", &rest.Config{Host: "https://quiet"})
				select {
				case <-quietDone:
				case <-time.After(time.Minute):
					b.Fatal("the quiet cluster was not reconciled")
				}
				mu.Lock()
				total += first.Sub(joined)
				mu.Unlock()
				f.stop()
			}
			b.ReportMetric(float64(total)/float64(time.Millisecond)/float64(b.N), "quiet-first-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkFleetMemory measures the heap one replica keeps for the caches
// of its member clusters when 20 members, each with 500 ConfigMaps of
// 2 KiB, are sharded over 1, 2 or 4 replicas (package queue/shard on a
// fake management cluster). Only the measured replica runs a fleet; the
// others hold their Leases, so the measured one gets its share of the
// members. MiB/replica is the live heap growth (after two forced GCs) from
// before its fleet started to when it had engaged every member it owns.
func BenchmarkFleetMemory(b *testing.B) {
	names := make([]string, 20)
	for i := range names {
		names[i] = fmt.Sprintf("member-%02d", i)
	}
	clients := memberClients(names, 500, 2048)
	for _, replicas := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			var mib, held float64
			for b.Loop() {
				mgmt := fake.NewClientset()
				ctx, cancel := context.WithCancel(quietContext())
				var wg sync.WaitGroup
				var measured *shard.Membership
				for i := range replicas {
					m, err := shard.New(shard.Config{Client: mgmt, Namespace: "fleet-system", Group: "bench", Identity: fmt.Sprint("replica-", i),
						LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 250 * time.Millisecond})
					if err != nil {
						b.Fatal(err)
					}
					if i == 0 {
						measured = m
					}
					wg.Go(func() { _ = m.Run(ctx) })
				}
				waitFor(b, "every replica is a member", func() bool { return len(measured.Members()) == replicas })
				before := sampleHeap()
				r := func(context.Context, struct{}, multicluster.Key) (reconcile.Result, error) {
					return reconcile.Result{}, nil
				}
				f := startBenchFleet(b, clients, r, []multicluster.Option{multicluster.WithSharding(measured)})
				for _, name := range names {
					f.members.Set(name, &rest.Config{Host: "https://" + name})
				}
				f.members.Synced()
				var own []string
				for _, name := range names {
					if shard.Assign(measured.Members(), name) == measured.Name() {
						own = append(own, name)
					}
				}
				waitFor(b, "the replica engages its members", func() bool {
					if !slices.Equal(f.fleet.Clusters(), own) {
						return false
					}
					for _, name := range own {
						if st, _ := f.fleet.Status(name); !st.Ready {
							return false
						}
					}
					return f.ctrl.Len() == 0
				})
				after := sampleHeap()
				mib += float64(growth(before, after).alloc) / (1 << 20)
				held += float64(len(own))
				f.stop()
				cancel()
				wg.Wait()
			}
			b.ReportMetric(mib/float64(b.N), "MiB/replica")
			b.ReportMetric(held/float64(b.N), "members/replica")
			b.ReportMetric(0, "ns/op")
		})
	}
}
