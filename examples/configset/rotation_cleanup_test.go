package main

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	fleetfake "github.com/ctrlkit/ctrlkit/examples/configset/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/examples/configset/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// A member whose credentials rotate (its Provider reports a new config)
// is still a member: its old engagement leaves, a new one joins. A
// ConfigSet deleted while the old one drains (a reconcile of another
// ConfigSet is still writing to it) keeps its finalizer: Fleet.Each
// reports the member not ready, and cleanup waits for it, so the member
// does not keep the ConfigMap of a deleted ConfigSet once its new
// credentials are engaged.
func TestConfigMapRemovedWhenDeletedDuringCredentialRotation(t *testing.T) {
	ctx := context.Background()
	hung, release := make(chan struct{}), make(chan struct{})
	var once, hangOnce sync.Once
	west := newMember()
	west.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName() == "other" {
			hangOnce.Do(func() { close(hung) })
			<-release // a write in flight that is slow to end
		}
		return false, nil, nil
	})
	w := &world{mgmt: fleetfake.NewClientset(), events: record.NewFakeRecorder(1000), members: map[string]*fake.Clientset{"east": newMember(), "west": west}}
	w.report.Set("east", &rest.Config{Host: "https://east"})
	w.report.Set("west", &rest.Config{Host: "https://west"})
	w.report.Synced()
	reconciletest.Strict(w.mgmt)
	factory := externalversions.NewSharedInformerFactory(w.mgmt, 0)
	c, err := newConfigSets(w.mgmt, factory.Fleet().V1alpha1().ConfigSets(), w.events, &w.report,
		[]multicluster.Option{multicluster.WithClients(w.client), multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond),
			multicluster.WithProbeInterval(time.Hour)}, queue.WithWorkers(4))
	require.NoError(t, err)
	queuetest.StartFleet(t, c.fleet, []queuetest.Controller{c.hub}, operator.WithInformers(factory))
	t.Cleanup(func() { once.Do(func() { close(release) }) })

	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Create(ctx, configSet("blue"), metav1.CreateOptions{})
	require.NoError(t, err)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": fleetv1alpha1.ReasonApplied}, "True/"+multicluster.ReasonAllMembersReady)
	require.Equal(t, map[string]string{"color": "blue"}, w.data("west"))

	// Another ConfigSet's write to west is in flight...
	other := configSet("red")
	other.Name = "other"
	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Create(ctx, other, metav1.CreateOptions{})
	require.NoError(t, err)
	<-hung
	// ...when west's kubeconfig Secret is rotated.
	w.report.Set("west", &rest.Config{Host: "https://west", BearerToken: "rotated"})
	require.Eventually(t, func() bool { return !slices.Contains(c.fleet.Clusters(), "west") }, waitFor, 5*time.Millisecond, "west's old engagement leaves")
	require.Contains(t, c.fleet.Members(), "west", "west is still a member")

	// The user deletes the ConfigSet meanwhile.
	require.NoError(t, w.mgmt.FleetV1alpha1().ConfigSets("app").Delete(ctx, "settings", metav1.DeleteOptions{}))
	deadline := time.Now().Add(3 * time.Second)
	for w.get() != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	gone := w.get() == nil
	once.Do(func() { close(release) }) // the write ends; west is engaged with its new credentials
	require.Eventually(t, func() bool { return slices.Contains(c.fleet.Clusters(), "west") }, waitFor, 5*time.Millisecond)
	require.Eventually(t, func() bool { return w.get() == nil && w.data("west") == nil }, 10*time.Second, 10*time.Millisecond,
		"west still holds the ConfigMap %v of the deleted ConfigSet (finalizer removed while west's old engagement drained: %v)", w.data("west"), gone)
}
