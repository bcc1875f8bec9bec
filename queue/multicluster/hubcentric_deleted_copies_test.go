package multicluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// docs/multicluster.md gives the hub-centric shape as the other way to
// write the same propagator ("One reconcile of the hub object walks the
// members instead"). The per-member shape deletes a member's copy once
// its source is gone (reconcileCopy); the hub-centric one only forgets
// the results: every member keeps the copy of a deleted source for good,
// and no finalizer or later event ever removes it.
func TestHubCentricShapeRemovesCopiesOfADeletedSource(t *testing.T) {
	ctx := context.Background()
	mgmt := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}, Data: map[string]string{"v": "1"}})
	factory := informers.NewSharedInformerFactory(mgmt, 0)
	member := fake.NewClientset()
	provider := &queuetest.Provider{}
	provider.Set("a", &rest.Config{Host: "https://a"})
	provider.Synced()

	sources := factory.Core().V1().ConfigMaps()
	p := &propagator{sources: sources.Lister()}
	var err error
	p.fleet, err = multicluster.New("everywhere", provider, p.engage,
		multicluster.WithClients(func(context.Context, string, *rest.Config) (kubernetes.Interface, error) { return member, nil }),
		multicluster.WithProbeInterval(time.Hour))
	require.NoError(t, err)
	var mu sync.Mutex
	var failures []error
	p.hub, err = queue.New("everywhere", reconcile.Func[cache.ObjectName](func(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
		res, err := p.reconcileEverywhere(ctx, key)
		if err != nil {
			mu.Lock()
			failures = append(failures, err)
			mu.Unlock()
		}
		return res, err
	}))
	require.NoError(t, err)
	p.results, err = multicluster.NewResults[string](p.fleet, p.hub)
	require.NoError(t, err)
	require.NoError(t, p.hub.Watch(queue.On(sources.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](p.hub)),
		multicluster.OnMembers(p.fleet, p.hub, func(multicluster.MemberChange) []cache.ObjectName { return p.allSources() })))
	statuses := &hubStatuses{members: map[cache.ObjectName][]multicluster.MemberStatus{}, ready: map[cache.ObjectName]metav1.Condition{}, writes: map[cache.ObjectName]int{}}
	p.writeStatus, p.written = statuses.write, statuses.written
	queuetest.StartFleet(t, p.fleet, []queuetest.Controller{p.hub}, operator.WithInformers(factory))

	web := cache.ObjectName{Namespace: "app", Name: "web"}
	require.Eventually(t, func() bool { e, ok, _ := statuses.entry(web, "a"); return ok && e.Reason == "Applied" }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, mgmt.CoreV1().ConfigMaps("app").Delete(ctx, "web", metav1.DeleteOptions{}))
	assert.Eventually(t, func() bool {
		_, err := member.CoreV1().ConfigMaps("app").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 10*time.Second, 5*time.Millisecond, "member a still holds the copy of the deleted source")
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, failures, "the deletion fails")
}
