package bench

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/ctrlkit/ctrlkit/foo"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
)

var cacheObjects = flag.Int("cache.objects", 100_000, "Deployments BenchmarkCacheMemory creates and caches")

// cachePeer is one way of caching every Deployment of the cluster: start
// returns a function that reports how many the cache holds, and one that
// stops it.
type cachePeer struct {
	name  string
	start func(ctx context.Context, cfg *rest.Config) (count func() int, stop func(), err error)
}

// clientGoPeer caches Deployments with a client-go informer, prepared by
// setUp before it starts.
func clientGoPeer(name string, setUp func(toolscache.SharedIndexInformer) error) cachePeer {
	return cachePeer{name: name, start: func(ctx context.Context, cfg *rest.Config) (func() int, func(), error) {
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		factory := informers.NewSharedInformerFactory(kube, 0)
		inf := factory.Apps().V1().Deployments().Informer()
		if err := setUp(inf); err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithCancel(ctx)
		factory.Start(ctx.Done())
		stop := func() { cancel(); factory.Shutdown() }
		if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			stop()
			return nil, nil, fmt.Errorf("%s did not sync", name)
		}
		return func() int { return len(inf.GetStore().ListKeys()) }, stop, nil
	}}
}

// crCachePeer caches Deployments with controller-runtime's cache,
// as a manager makes it, with transform as its DefaultTransform.
func crCachePeer(name string, transform toolscache.TransformFunc) cachePeer {
	return cachePeer{name: name, start: func(ctx context.Context, cfg *rest.Config) (func() int, func(), error) {
		c, err := crcache.New(cfg, crcache.Options{Scheme: clientgoscheme.Scheme, DefaultTransform: transform})
		if err != nil {
			return nil, nil, err
		}
		inf, err := c.GetInformer(ctx, &appsv1.Deployment{})
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { _ = c.Start(ctx) })
		stop := func() { cancel(); wg.Wait() }
		if !c.WaitForCacheSync(ctx) {
			stop()
			return nil, nil, fmt.Errorf("%s did not sync", name)
		}
		store := inf.(toolscache.SharedIndexInformer).GetStore()
		return func() int { return len(store.ListKeys()) }, stop, nil
	}}
}

// cachePeers are the caches BenchmarkCacheMemory compares. Every client
// asks for protobuf, as controller-runtime's and ctrlkit's do by default.
var cachePeers = []cachePeer{
	clientGoPeer("client-go-full", func(toolscache.SharedIndexInformer) error { return nil }),
	clientGoPeer("ctrlkit-stripped", func(inf toolscache.SharedIndexInformer) error {
		return inf.SetTransform(informer.StripManagedFields)
	}),
	clientGoPeer("ctrlkit-trimmed", func(inf toolscache.SharedIndexInformer) error {
		return informer.Trim[*appsv1.Deployment](inf, foo.DeploymentFields...)
	}),
	crCachePeer("controller-runtime-full", nil),
	crCachePeer("controller-runtime-stripped", crcache.TransformStripManagedFields()),
}

// cacheCluster is an API server holding n Deployments as the Foo
// controller and kube-controller-manager leave them: created with the
// controller's template and owner reference, then their status written,
// each by its own field manager.
func cacheCluster(tb testing.TB, n int) *rest.Config {
	cp := controlplane.StartT(tb, controlplane.Options{})
	admin := cp.Config()
	admin.QPS, admin.Burst = -1, 0 // no client-side rate limit
	kube, err := kubernetes.NewForConfig(admin)
	require.NoError(tb, err)
	ctx := tb.Context()
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{})
	require.NoError(tb, err)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				d := benchDeployment(i, false)
				d.Namespace, d.ResourceVersion, d.UID, d.Status = "bench", "", "", appsv1.DeploymentStatus{}
				created, err := kube.AppsV1().Deployments("bench").Create(ctx, d, metav1.CreateOptions{FieldManager: "foo-controller"})
				if err == nil {
					created.Status = benchDeployment(i, false).Status
					_, err = kube.AppsV1().Deployments("bench").UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
				}
				if err != nil {
					errs <- fmt.Errorf("deployment %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(tb, <-errs)
	cfg := cp.Config()
	cfg.QPS, cfg.Burst = -1, 0
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return cfg
}

// cacheMemory is what one peer's cache cost.
type cacheMemory struct {
	live, peak uint64 // heap growth after the sync, and at its highest during it
}

// measureCache starts the peer's cache of the cluster's n Deployments and
// measures the heap it keeps, and the highest the heap got while it synced
// (sampled every few milliseconds).
func measureCache(tb testing.TB, cfg *rest.Config, p cachePeer, n int) cacheMemory {
	base := sampleHeap()
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(samples)
			if v := samples[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	count, stop, err := p.start(tb.Context(), cfg)
	close(done)
	sampler.Wait()
	require.NoError(tb, err)
	defer stop()
	require.Equal(tb, n, count(), "%s caches every Deployment", p.name)
	after := sampleHeap()
	runtime.KeepAlive(count)
	return cacheMemory{live: after.alloc - min(base.alloc, after.alloc), peak: peak.Load() - min(base.alloc, peak.Load())}
}

// BenchmarkCacheMemory measures the heap one informer keeps for every
// Deployment of an API server holding -cache.objects of them (100,000 by
// default, created directly: no controller runs), for each way of caching
// them: client-go's informer keeping everything, ctrlkit's informers with
// informer.StripManagedFields and trimmed to what the Foo controller reads
// (informer.Trim with foo.DeploymentFields), and controller-runtime's
// cache without and with its managedFields transform. Every peer runs in
// this process in turn, against the same API server. Reported per
// Deployment: live heap (B/object) and the highest heap growth while the
// cache synced (peak-B/object). Run it with -benchtime 1x.
func BenchmarkCacheMemory(b *testing.B) {
	n := *cacheObjects
	cfg := cacheCluster(b, n)
	for _, p := range cachePeers {
		b.Run("cache="+p.name, func(b *testing.B) {
			var live, peak uint64
			runs := 0
			for b.Loop() {
				m := measureCache(b, cfg, p, n)
				live += m.live
				peak += m.peak
				runs++
			}
			per := float64(runs) * float64(n)
			b.ReportMetric(float64(live)/per, "B/object")
			b.ReportMetric(float64(peak)/per, "peak-B/object")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// Every peer caches every Deployment, and ctrlkit's trimmed cache keeps
// less than its stripped one, which keeps less than everything.
func TestCacheMemoryPeers(t *testing.T) {
	const n = 300
	cfg := cacheCluster(t, n)
	live := map[string]uint64{}
	for _, p := range cachePeers {
		live[p.name] = measureCache(t, cfg, p, n).live
	}
	t.Logf("live heap per Deployment: %v", func() map[string]uint64 {
		per := map[string]uint64{}
		for k, v := range live {
			per[k] = v / n
		}
		return per
	}())
	require.Less(t, live["ctrlkit-trimmed"], live["ctrlkit-stripped"])
	require.Less(t, live["ctrlkit-stripped"], live["client-go-full"])
}
