package multicluster_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// The hub-centric shape docs/multicluster.md shows (reconcileEverywhere)
// returns the members' errors: a member whose apply fails twice with the
// same error (the second failure sets an equal result, which adds no key)
// is tried again with the key's backoff, and its third attempt succeeds.
func TestHubCentricShapeRetriesAFailedMember(t *testing.T) {
	mgmt := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}, Data: map[string]string{"v": "1"}})
	factory := informers.NewSharedInformerFactory(mgmt, 0)
	member := fake.NewClientset()
	var creates atomic.Int32
	member.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if creates.Add(1) <= 2 { // etcd is slow for a moment
			return true, nil, apierrors.NewInternalError(errEtcd)
		}
		return false, nil, nil
	})
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
	p.hub, err = queue.New("everywhere", reconcile.Func[cache.ObjectName](p.reconcileEverywhere))
	require.NoError(t, err)
	p.results, err = multicluster.NewResults[string](p.fleet, p.hub)
	require.NoError(t, err)
	require.NoError(t, p.hub.Watch(queue.On(sources.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](p.hub)),
		multicluster.OnMembers(p.fleet, p.hub, func(multicluster.MemberChange) []cache.ObjectName { return p.allSources() })))
	statuses := &hubStatuses{members: map[cache.ObjectName][]multicluster.MemberStatus{}, ready: map[cache.ObjectName]metav1.Condition{}, writes: map[cache.ObjectName]int{}}
	p.writeStatus, p.written = statuses.write, statuses.written
	queuetest.StartFleet(t, p.fleet, []queuetest.Controller{p.hub}, operator.WithInformers(factory))

	web := cache.ObjectName{Namespace: "app", Name: "web"}
	applied := func() bool { e, ok, _ := statuses.entry(web, "a"); return ok && e.Reason == "Applied" }
	if !assert.Eventually(t, applied, 10*time.Second, 5*time.Millisecond) {
		e, _, ready := statuses.entry(web, "a")
		t.Fatalf("a is never applied after %d attempts (the third would succeed): %+v, %s/%s", creates.Load(), e, ready.Status, ready.Reason)
	}
}

var errEtcd = errString("etcdserver: request timed out")

type errString string

func (e errString) Error() string { return string(e) }
