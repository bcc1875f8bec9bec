package multicluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
)

// Results.Status promises that a hub reconcile that skips its status
// write while the reason is ReasonFleetNotSynced "runs again then, and a
// restart of the operator does not flap a status that still holds", and
// docs/multicluster.md says so for both shapes. In the documented
// per-member keys shape the results live in memory only: after a restart
// the Fleet syncs before any member's reconcile reported, so the pass
// that follows the sync finds every member Pending ("no result yet") and
// writes False/MembersNotReady (a Warning transition), then True again
// once the members report, although each member held its copy all along.
func TestPerMemberShapeRestartDoesNotFlapStatus(t *testing.T) {
	c := newClusters("a")
	// Member a holds the copy from before the restart; it answers a little
	// slowly (as a remote API server does).
	member := c.clients["a"]
	require.NoError(t, member.Tracker().Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}, Data: map[string]string{"v": "1"}}))
	member.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		time.Sleep(300 * time.Millisecond)
		return false, nil, nil
	})
	mgmt := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", Generation: 1}, Data: map[string]string{"v": "1"}})
	factory := informers.NewSharedInformerFactory(mgmt, 0)
	provider := &queuetest.Provider{}
	provider.Set("a", c.config("a"))
	provider.Synced()
	p, err := newPropagator(provider, factory.Core().V1().ConfigMaps(), multicluster.WithClients(c.newClient))
	require.NoError(t, err)
	var mu sync.Mutex
	var written []metav1.Condition
	// As the docs tell: nothing is written while the Fleet has not synced
	// or stops, so the status from before the restart (True) stands.
	p.written = func(*corev1.ConfigMap) int { return 1 } // a status from before the restart
	p.writeStatus = func(_ context.Context, _ *corev1.ConfigMap, _ []multicluster.MemberStatus, ready metav1.Condition) error {
		if ready.Reason == multicluster.ReasonFleetNotSynced || ready.Reason == multicluster.ReasonFleetStopping {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		written = append(written, ready)
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	factory.Start(ctx.Done())
	wg.Go(func() { _ = p.fleet.Run(ctx) })
	wg.Go(func() { _ = p.hub.Run(ctx) })
	wg.Go(func() { _ = p.copies.Run(ctx) })

	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(written) > 0 && written[len(written)-1].Status == metav1.ConditionTrue
	}, waitFor, time.Millisecond, "the status settles True")
	mu.Lock()
	defer mu.Unlock()
	for _, cond := range written {
		require.Equal(t, metav1.ConditionTrue, cond.Status, "a restart wrote %s/%s (%s) over a status that held all along; writes: %d", cond.Status, cond.Reason, cond.Message, len(written))
	}
}
