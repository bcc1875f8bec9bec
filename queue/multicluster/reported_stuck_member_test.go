package multicluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
)

// docs/multicluster.md: a member the Fleet does not have ready is listed
// Unreachable, and OnMembers on the hub controller re-queues the hub key
// when a member stops answering. With Results.Reported, the documented
// per-member shape writes nothing while any ready member has no result
// kept: a member that joins and is ready (it answers its probes) but
// whose first reconcile does not finish (a write that hangs, a long
// backlog) freezes the status of every hub object. Here b stops
// answering while c's first reconcile hangs: the status keeps saying b
// is Applied and the condition True, for as long as c hangs.
func TestPerMemberStatusNotFrozenByMemberThatHasNotReported(t *testing.T) {
	c := newClusters("a", "b", "c")
	hang := make(chan struct{})
	// c's API server answers /version but takes a read of a ConfigMap and
	// never answers it.
	newClient := func(ctx context.Context, name string, cfg *rest.Config) (kubernetes.Interface, error) {
		cl, err := c.newClient(ctx, name, cfg)
		if err != nil || name != "c" {
			return cl, err
		}
		return hangingClient{Interface: cl, hang: hang}, nil
	}
	mgmt := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}, Data: map[string]string{"v": "1"}})
	factory := informers.NewSharedInformerFactory(mgmt, 0)
	provider := &queuetest.Provider{}
	p, err := newPropagator(provider, factory.Core().V1().ConfigMaps(), multicluster.WithClients(newClient),
		multicluster.WithProbeInterval(20*time.Millisecond), multicluster.WithSyncTimeout(200*time.Millisecond),
		multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	require.NoError(t, err)
	statuses := &hubStatuses{members: map[cache.ObjectName][]multicluster.MemberStatus{}, ready: map[cache.ObjectName]metav1.Condition{}, writes: map[cache.ObjectName]int{}}
	p.writeStatus, p.written = statuses.write, statuses.written
	web := cacheName("app", "web")

	provider.Set("a", c.config("a"))
	provider.Set("b", c.config("b"))
	provider.Synced()
	queuetest.StartFleet(t, p.fleet, []queuetest.Controller{p.copies, p.hub}, operator.WithInformers(factory))
	t.Cleanup(func() { close(hang) }) // runs before the stop

	require.Eventually(t, func() bool {
		e, ok, ready := statuses.entry(web, "b")
		return ok && e.Reason == "Applied" && ready.Reason == multicluster.ReasonAllMembersReady
	}, waitFor, time.Millisecond, "a and b Applied")

	// c joins: ready (it answers /version), its first apply hangs.
	provider.Set("c", c.config("c"))
	require.Eventually(t, func() bool { st, _ := p.fleet.Status("c"); return st.Ready }, waitFor, time.Millisecond, "c ready")

	// b stops answering.
	c.down["b"].Store(true)
	require.Eventually(t, func() bool { st, _ := p.fleet.Status("b"); return !st.Ready }, waitFor, time.Millisecond, "b not ready")
	ok := false
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && !ok; time.Sleep(10 * time.Millisecond) {
		e, listed, ready := statuses.entry(web, "b")
		ok = listed && e.Reason == multicluster.ReasonUnreachable && ready.Status != metav1.ConditionTrue
	}
	e, _, ready := statuses.entry(web, "b")
	require.True(t, ok, "3s after b stopped answering, the status still says b %s (%s), condition %s/%s (%s): a ready member without a result (c) keeps every status write back",
		e.Reason, e.Message, ready.Status, ready.Reason, ready.Message)
}

// hangingClient is a member's client whose reads of ConfigMaps hang until
// hang is closed (or their context ends); each read calls enter first,
// when set.
type hangingClient struct {
	kubernetes.Interface
	hang  chan struct{}
	enter func()
}

func (h hangingClient) CoreV1() typedcorev1.CoreV1Interface {
	return hangingCore{CoreV1Interface: h.Interface.CoreV1(), hang: h.hang, enter: h.enter}
}

type hangingCore struct {
	typedcorev1.CoreV1Interface
	hang  chan struct{}
	enter func()
}

func (h hangingCore) ConfigMaps(namespace string) typedcorev1.ConfigMapInterface {
	return hangingConfigMaps{ConfigMapInterface: h.CoreV1Interface.ConfigMaps(namespace), hang: h.hang, enter: h.enter}
}

type hangingConfigMaps struct {
	typedcorev1.ConfigMapInterface
	hang  chan struct{}
	enter func()
}

func (h hangingConfigMaps) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	if h.enter != nil {
		h.enter()
	}
	select {
	case <-h.hang:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.ConfigMapInterface.Get(ctx, name, opts)
}
