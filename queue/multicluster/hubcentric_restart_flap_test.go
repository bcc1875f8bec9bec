package multicluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// The hub-centric snippet of docs/multicluster.md (reconcileEverywhere,
// example_status_test.go) at a restart: a is engaged at once, b a moment
// later, and the Fleet syncs with b while a reconcile walks the members.
// The walk found b engaging (not walked); Status, asked after the walk,
// would find the Fleet synced and b ready with no result: Pending, and
// the Ready condition, True before the restart with both members
// Applied, would flap to False and back, each a transition with its
// event. Reported, asked after the walk, holds the write back until b
// reports.
func TestHubCentricSnippetDoesNotFlapReadyAtRestart(t *testing.T) {
	src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}, Data: map[string]string{"v": "1"}}
	mgmt := fake.NewClientset(src.DeepCopy())
	factory := informers.NewSharedInformerFactory(mgmt, 0)
	// What the previous run left: both members hold the copy.
	memberClients := map[string]*fake.Clientset{"a": fake.NewClientset(src.DeepCopy()), "b": fake.NewClientset(src.DeepCopy())}
	hang, aEntered := make(chan struct{}), make(chan struct{})
	var enterOnce, hangOnce sync.Once
	release := func() { hangOnce.Do(func() { close(hang) }) }
	t.Cleanup(release)
	newClient := func(ctx context.Context, name string, _ *rest.Config) (kubernetes.Interface, error) {
		if name == "a" { // a's walk reads the copy once b has become ready
			return hangingClient{Interface: memberClients["a"], hang: hang, enter: func() { enterOnce.Do(func() { close(aEntered) }) }}, nil
		}
		select { // b is engaged while a reconcile walks a
		case <-aEntered:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		// Makes it likely that the walk finds b not ready (the race
		// this test is about); where it does not, b is walked and the
		// test passes without having made the race.
		time.Sleep(100 * time.Millisecond)
		return memberClients[name], nil
	}
	provider := &queuetest.Provider{}
	provider.Set("a", &rest.Config{Host: "https://a"})
	provider.Set("b", &rest.Config{Host: "https://b"})
	provider.Synced()

	sources := factory.Core().V1().ConfigMaps()
	p := &propagator{sources: sources.Lister()}
	var err error
	p.fleet, err = multicluster.New("everywhere", provider, p.engage, multicluster.WithClients(newClient), multicluster.WithProbeInterval(time.Hour))
	require.NoError(t, err)
	p.hub, err = queue.New("everywhere", reconcile.Func[cache.ObjectName](p.reconcileEverywhere))
	require.NoError(t, err)
	p.results, err = multicluster.NewResults[string](p.fleet, p.hub)
	require.NoError(t, err)
	require.NoError(t, p.hub.Watch(queue.On(sources.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](p.hub)),
		multicluster.OnMembers(p.fleet, p.hub, func(multicluster.MemberChange) []cache.ObjectName { return p.allSources() })))

	web := cacheName("app", "web")
	var mu sync.Mutex
	var written []string // every status written: the condition and the entries
	// The status written before the restart: both Applied, Ready True.
	last := metav1.ConditionTrue
	p.written = func(*corev1.ConfigMap) int { return 2 }
	p.writeStatus = func(_ context.Context, _ *corev1.ConfigMap, members []multicluster.MemberStatus, ready metav1.Condition) error {
		if ready.Reason == multicluster.ReasonFleetNotSynced || ready.Reason == multicluster.ReasonFleetStopping {
			return nil // as docs/multicluster.md says: the status from before stands
		}
		mu.Lock()
		defer mu.Unlock()
		if ready.Status != last {
			written = append(written, fmt.Sprintf("%s/%s %v", ready.Status, ready.Reason, members))
			last = ready.Status
		}
		return nil
	}
	queuetest.StartFleet(t, p.fleet, []queuetest.Controller{p.hub}, operator.WithInformers(factory))
	require.Eventually(t, func() bool { st, _ := p.fleet.Status("b"); return st.Ready }, waitFor, time.Millisecond)
	release() // a's walk goes on

	// Every member reports Applied in the end.
	require.Eventually(t, func() bool {
		a, okA := p.results.Get(web, "a")
		b, okB := p.results.Get(web, "b")
		return okA && okB && a.Ready && b.Ready
	}, waitFor, time.Millisecond)
	// Then the hub controller has nothing left to do: every status is written.
	require.Eventually(t, func() bool { return p.hub.Len() == 0 && p.hub.Active() == 0 }, waitFor, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, written, "the restart flapped the Ready condition (True before it, both members Applied throughout): transitions written")
}
