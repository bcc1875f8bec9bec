package bench

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooscheme "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/scheme"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/informer"
)

// memoryObjects is the number of Foos, and of Deployments, that the
// informers of BenchmarkInformerMemory sync.
const memoryObjects = 10_000

// heapSample is the live heap after a full collection.
type heapSample struct {
	alloc, inuse uint64
}

func sampleHeap() heapSample {
	// Two cycles: the first may only finish sweeping what an earlier one
	// marked.
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return heapSample{alloc: ms.HeapAlloc, inuse: ms.HeapInuse}
}

// memoryResult is the heap growth caused by syncing the informers: first
// the Foo informer alone, then the Deployment informer as well.
type memoryResult struct {
	foos, deployments heapSample // growth from each informer
	total             heapSample // growth from both
}

func growth(from, to heapSample) heapSample {
	return heapSample{alloc: to.alloc - min(from.alloc, to.alloc), inuse: to.inuse - min(from.inuse, to.inuse)}
}

// measureInformerMemory syncs a Foo informer and a Deployment informer from
// fake clientsets holding n Foos and n Deployments (all with managedFields),
// with transform set on both factories unless it is nil, and measures how
// much the live heap grew. check, if not nil, sees both stores before the
// informers stop.
func measureInformerMemory(tb testing.TB, n int, transform cache.TransformFunc, check func(foos, deployments cache.Store)) memoryResult {
	fooClient, kubeClient := memoryClients(n)
	var fooOpts []fooinformers.SharedInformerOption
	var kubeOpts []informers.SharedInformerOption
	if transform != nil {
		fooOpts = append(fooOpts, fooinformers.WithTransform(transform))
		kubeOpts = append(kubeOpts, informers.WithTransform(transform))
	}
	fooFactory := fooinformers.NewSharedInformerFactoryWithOptions(fooClient, 0, fooOpts...)
	kubeFactory := informers.NewSharedInformerFactoryWithOptions(kubeClient, 0, kubeOpts...)
	fooInformer := fooFactory.Samplecontroller().V1alpha1().Foos().Informer()
	deploymentInformer := kubeFactory.Apps().V1().Deployments().Informer()

	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		fooFactory.Shutdown()
		kubeFactory.Shutdown()
	}()

	base := sampleHeap()
	fooFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), fooInformer.HasSynced) {
		tb.Fatal("Foo informer did not sync")
	}
	afterFoos := sampleHeap()
	kubeFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), deploymentInformer.HasSynced) {
		tb.Fatal("Deployment informer did not sync")
	}
	afterAll := sampleHeap()

	if got := len(fooInformer.GetStore().ListKeys()); got != n {
		tb.Fatalf("Foo informer holds %d objects, want %d", got, n)
	}
	if got := len(deploymentInformer.GetStore().ListKeys()); got != n {
		tb.Fatalf("Deployment informer holds %d objects, want %d", got, n)
	}
	if check != nil {
		check(fooInformer.GetStore(), deploymentInformer.GetStore())
	}
	// The clients stay reachable through the informers; keep them alive
	// explicitly up to here anyway.
	runtime.KeepAlive(fooClient)
	runtime.KeepAlive(kubeClient)
	return memoryResult{
		foos:        growth(base, afterFoos),
		deployments: growth(afterFoos, afterAll),
		total:       growth(base, afterAll),
	}
}

// memoryClients returns fake clientsets holding n Foos and n Deployments
// that answer list calls with freshly decoded objects.
func memoryClients(n int) (*foofake.Clientset, *kubefake.Clientset) {
	foos := make([]k8sruntime.Object, n)
	deployments := make([]k8sruntime.Object, n)
	for i := range n {
		foos[i] = benchFoo(i, true)
		deployments[i] = benchDeployment(i, true)
	}
	// The trackers store deep copies; the originals become garbage before
	// the baseline is taken.
	fooClient := foofake.NewClientset(foos...)
	fooClient.PrependReactor("list", "foos", decodingListReactor(fooClient.Tracker(), fooscheme.Scheme, fooscheme.Codecs))
	kubeClient := kubefake.NewClientset(deployments...)
	kubeClient.PrependReactor("list", "deployments", decodingListReactor(kubeClient.Tracker(), kubescheme.Scheme, kubescheme.Codecs))
	return fooClient, kubeClient
}

// BenchmarkInformerMemory measures the heap that informers keep after
// syncing 10,000 Foos and 10,000 Deployments (each with the managedFields
// an API server records) from fake clientsets, without a transform and with
// informer.StripManagedFields. Each op builds fresh clientsets and
// informers; run it with -benchtime 1x. Reported per object: live heap
// growth (B/object, both kinds together; B/foo and B/deployment each) and
// growth of in-use heap spans (inuse-B/object).
func BenchmarkInformerMemory(b *testing.B) {
	transforms := []struct {
		name string
		fn   cache.TransformFunc
	}{
		{"none", nil},
		{"strip-managed-fields", informer.StripManagedFields},
	}
	for _, tr := range transforms {
		b.Run(fmt.Sprintf("transform=%s", tr.name), func(b *testing.B) {
			var sum memoryResult
			runs := 0
			for b.Loop() {
				r := measureInformerMemory(b, memoryObjects, tr.fn, nil)
				sum.foos.alloc += r.foos.alloc
				sum.deployments.alloc += r.deployments.alloc
				sum.total.alloc += r.total.alloc
				sum.total.inuse += r.total.inuse
				runs++
			}
			per := float64(runs) * memoryObjects
			b.ReportMetric(float64(sum.total.alloc)/(2*per), "B/object")
			b.ReportMetric(float64(sum.foos.alloc)/per, "B/foo")
			b.ReportMetric(float64(sum.deployments.alloc)/per, "B/deployment")
			b.ReportMetric(float64(sum.total.inuse)/(2*per), "inuse-B/object")
			b.ReportMetric(0, "ns/op")
		})
	}
}
