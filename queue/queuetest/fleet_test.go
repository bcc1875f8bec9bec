package queuetest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// fleetTest is the test that ExampleStartFleet shows.
var fleetTest func(t *testing.T)

func ExampleStartFleet() {
	// The test of a fleet operator, run by TestStartFleetExample.
	fleetTest = func(t *testing.T) {
		// Two members, each a fake clientset with a ConfigMap.
		members := map[string]*fake.Clientset{}
		var provider queuetest.Provider
		for _, name := range []string{"east", "west"} {
			members[name] = fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"}})
			provider.Set(name, &rest.Config{Host: "https://" + name})
		}
		provider.Synced()

		// A controller that marks every ConfigMap of every member.
		var ctrl *queue.Controller[multicluster.Key]
		fleet, err := multicluster.New("marker", &provider, func(ctx context.Context, cl *multicluster.Cluster) (kubernetes.Interface, error) {
			configMaps := cl.Informers.Core().V1().ConfigMaps().TypedInformer()
			_, err := configMaps.AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(ctrl)), cache.HandlerOptions{})
			return cl.Client, err
		}, multicluster.WithClients(func(_ context.Context, name string, _ *rest.Config) (kubernetes.Interface, error) {
			return members[name], nil
		}))
		require.NoError(t, err)
		ctrl, err = multicluster.NewController(fleet, "marker", func(ctx context.Context, client kubernetes.Interface, key multicluster.Key) (reconcile.Result, error) {
			cm, err := client.CoreV1().ConfigMaps(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
			if err != nil || cm.Labels["marked"] == key.Cluster {
				return reconcile.Result{}, err
			}
			cm.Labels = map[string]string{"marked": key.Cluster}
			_, err = client.CoreV1().ConfigMaps(key.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
			return reconcile.Result{}, err
		})
		require.NoError(t, err)

		queuetest.StartFleet(t, fleet, []queuetest.Controller{ctrl})
		queuetest.WaitIdle(t, ctrl, members["east"], members["west"])
		for name, client := range members {
			cm, err := client.CoreV1().ConfigMaps("app").Get(context.Background(), "settings", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, name, cm.Labels["marked"])
		}
	}
}

// The example of StartFleet runs: once StartFleet returned, the members
// the Provider reported before are engaged, so WaitIdle waits for their
// first reconciles.
func TestStartFleetExample(t *testing.T) {
	ExampleStartFleet()
	fleetTest(t)
}

// recorded is a testing.TB that records the failures reported on it,
// instead of failing the test.
type recorded struct {
	testing.TB

	mu       sync.Mutex
	failures []string
}

func (r *recorded) Errorf(format string, args ...any) { r.record(fmt.Sprintf(format, args...)) }
func (r *recorded) Fatalf(format string, args ...any) { r.record(fmt.Sprintf(format, args...)) }

func (r *recorded) record(failure string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, failure)
}

// failingProvider fails at once.
type failingProvider struct{}

func (failingProvider) Run(context.Context, multicluster.Members) error {
	return errors.New("no members for you")
}

// StartFleet reports the error of a Fleet that stops on the test.
func TestStartFleetReportsErrors(t *testing.T) {
	rec := &recorded{}
	t.Run("fleet", func(t *testing.T) {
		rec.TB = t
		fleet, err := multicluster.New("failing", failingProvider{}, func(context.Context, *multicluster.Cluster) (struct{}, error) { return struct{}{}, nil })
		require.NoError(t, err)
		queuetest.StartFleet(rec, fleet, nil)
	})
	require.NotEmpty(t, rec.failures)
	for _, f := range rec.failures {
		assert.Contains(t, f, "no members for you")
	}
}

// StartFleet runs the hub's informers and controllers beside the Fleet,
// waits for all of them to sync, and stops them all when the test ends.
func TestStartFleetWithHubControllers(t *testing.T) {
	hub := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "hub", Name: "source"}})
	factory := informers.NewSharedInformerFactory(hub, 0)
	var (
		mu   sync.Mutex
		seen []string
	)
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, s)
	}
	hubCtrl, err := queue.New("hub", reconcile.Func[cache.ObjectName](func(_ context.Context, key cache.ObjectName) (reconcile.Result, error) {
		note("hub " + key.String())
		return reconcile.Result{}, nil
	}))
	require.NoError(t, err)
	require.NoError(t, hubCtrl.Watch(queue.On(factory.Core().V1().ConfigMaps().TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](hubCtrl))))

	var provider queuetest.Provider
	provider.Set("east", &rest.Config{Host: "https://east"})
	provider.Synced()
	member := fake.NewClientset()
	fleet, err := multicluster.New("fleet", &provider, func(context.Context, *multicluster.Cluster) (struct{}, error) { return struct{}{}, nil },
		multicluster.WithClients(func(context.Context, string, *rest.Config) (kubernetes.Interface, error) { return member, nil }))
	require.NoError(t, err)
	memberCtrl, err := multicluster.NewController(fleet, "member", func(_ context.Context, _ struct{}, key multicluster.Key) (reconcile.Result, error) {
		note("member " + key.String())
		return reconcile.Result{}, nil
	})
	require.NoError(t, err)

	queuetest.StartFleet(t, fleet, []queuetest.Controller{hubCtrl, memberCtrl}, operator.WithInformers(factory))
	assert.True(t, fleet.HasSynced())
	st, ok := fleet.Status("east")
	assert.True(t, ok && st.Ready, "the member reported before StartFleet is ready: %+v", st)
	memberCtrl.Add(multicluster.Key{Cluster: "east", ObjectName: cache.ObjectName{Namespace: "app", Name: "x"}})
	queuetest.WaitIdle(t, hubCtrl, hub)
	queuetest.WaitIdle(t, memberCtrl, member)
	mu.Lock()
	defer mu.Unlock()
	assert.ElementsMatch(t, []string{"hub hub/source", "member east/app/x"}, seen)
}

// members records what a Provider reports, as a Fleet's Members would
// receive it; with refuser set, it is a multicluster.Refuser too.
type members struct {
	mu    sync.Mutex
	calls []string
}

func (m *members) record(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, s)
}

func (m *members) Set(name string, cfg *rest.Config) { m.record("set " + name + " " + cfg.Host) }
func (m *members) Delete(name string)                { m.record("delete " + name) }
func (m *members) Synced()                           { m.record("synced") }

func (m *members) Calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

type refuser struct{ members }

func (r *refuser) Refuse(name string, err error) { r.record("refuse " + name + ": " + err.Error()) }

// A Provider reports what the test reported before it ran, in order, and
// then what the test reports as it does; a refusal reaches a Refuser as
// one, other Members as a Delete.
func TestProvider(t *testing.T) {
	tests := []struct {
		name    string
		members interface {
			multicluster.Members
			Calls() []string
		}
		refusal string
	}{
		{name: "refuser", members: &refuser{}, refusal: "refuse c: not allowed"},
		{name: "members", members: &members{}, refusal: "delete c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p queuetest.Provider
			p.Set("a", &rest.Config{Host: "https://a"})
			p.Set("b", &rest.Config{Host: "https://b"})
			p.Delete("a")
			p.Synced()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx, tt.members) }()
			require.Eventually(t, func() bool { return len(tt.members.Calls()) == 4 }, queuetest.Timeout, time.Millisecond)
			assert.Equal(t, []string{"set a https://a", "set b https://b", "delete a", "synced"}, tt.members.Calls())
			p.Refuse("c", errors.New("not allowed"))
			p.Set("d", &rest.Config{Host: "https://d"})
			assert.Equal(t, []string{tt.refusal, "set d https://d"}, tt.members.Calls()[4:], "reported at once while it runs")
			cancel()
			require.NoError(t, <-done)
		})
	}
}

// The example of the package documentation.
func TestStartFleetPackageDoc(t *testing.T) {
	hub, east := fake.NewClientset(), fake.NewClientset()
	hubInformers := informers.NewSharedInformerFactory(hub, 0)
	fakeClients := func(context.Context, string, *rest.Config) (kubernetes.Interface, error) { return east, nil }
	engage := func(context.Context, *multicluster.Cluster) (struct{}, error) { return struct{}{}, nil }
	reconcileCopy := func(context.Context, struct{}, multicluster.Key) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}

	var provider queuetest.Provider
	provider.Set("east", &rest.Config{Host: "https://east"})
	provider.Synced()
	fleet, err := multicluster.New("copier", &provider, engage, multicluster.WithClients(fakeClients))
	require.NoError(t, err)
	ctrl, err := multicluster.NewController(fleet, "copier", reconcileCopy)
	require.NoError(t, err)
	queuetest.StartFleet(t, fleet, []queuetest.Controller{ctrl}, operator.WithInformers(hubInformers))
	queuetest.WaitIdle(t, ctrl, hub, east)

	st, ok := fleet.Status("east")
	assert.True(t, ok && st.Ready, "%+v", st)
}
