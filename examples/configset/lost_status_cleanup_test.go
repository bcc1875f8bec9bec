package main

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	fleetfake "github.com/ctrlkit/ctrlkit/examples/configset/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/examples/configset/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// cleanup decides which members hold the ConfigMap from the spec and the
// status written, but a write to a member can happen without its status
// write (a 409 on the status update, as when the user edits the spec
// meanwhile). A member that got the ConfigMap that way, then dropped
// from the spec while its credentials rotate (not ready), is never listed
// Removing; a deletion then removes the finalizer without waiting for it,
// and the member keeps the ConfigMap of a deleted ConfigSet for good.
func TestConfigMapRemovedWhenStatusWriteWasLost(t *testing.T) {
	ctx := context.Background()
	var failStatus atomic.Bool
	w := &world{mgmt: fleetfake.NewClientset(), events: record.NewFakeRecorder(1000), members: map[string]*fake.Clientset{"east": newMember(), "west": newMember()}}
	west := w.members["west"]
	w.report.Set("east", &rest.Config{Host: "https://east"})
	w.report.Set("west", &rest.Config{Host: "https://west"})
	w.report.Synced()
	reconciletest.Strict(w.mgmt)
	w.mgmt.PrependReactor("update", "configsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && failStatus.Load() {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "fleet.ctrlkit.dev", Resource: "configsets"}, "settings", nil)
		}
		return false, nil, nil
	})
	factory := externalversions.NewSharedInformerFactory(w.mgmt, 0)
	c, err := newConfigSets(w.mgmt, factory.Fleet().V1alpha1().ConfigSets(), w.events, &w.report,
		[]multicluster.Option{multicluster.WithClients(w.client), multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond),
			multicluster.WithProbeInterval(time.Hour)})
	require.NoError(t, err)
	queuetest.StartFleet(t, c.fleet, []queuetest.Controller{c.hub}, operator.WithInformers(factory))
	require.Eventually(t, c.fleet.HasSynced, waitFor, 5*time.Millisecond)

	westData := func() map[string]string {
		cm, err := west.CoreV1().ConfigMaps("app").Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return cm.Data
	}
	// The status writes conflict while west gets the ConfigMap.
	failStatus.Store(true)
	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Create(ctx, configSet("blue", "west"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return westData() != nil }, waitFor, 5*time.Millisecond, "west gets the ConfigMap")

	// west's credentials rotate, its new ones not working yet: not ready.
	w.mu.Lock()
	w.members["west"] = nil
	w.mu.Unlock()
	w.report.Set("west", &rest.Config{Host: "https://west", BearerToken: "rotated"})
	require.Eventually(t, func() bool { st, _ := c.fleet.Status("west"); return !st.Ready }, waitFor, 5*time.Millisecond)

	// The user moves the ConfigSet to east; the status writes succeed again.
	cs := w.get()
	cs.Spec.Members = []string{"east"}
	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Update(ctx, cs, metav1.UpdateOptions{})
	require.NoError(t, err)
	failStatus.Store(false)
	require.Eventually(t, func() bool { got, _ := w.status(); return got["east"] == fleetv1alpha1.ReasonApplied }, waitFor, 5*time.Millisecond)
	reasons, _ := w.status()
	t.Logf("status while west holds the ConfigMap and is not ready: %v", reasons)

	// The user deletes the ConfigSet while west still holds its ConfigMap.
	require.NoError(t, w.mgmt.FleetV1alpha1().ConfigSets("app").Delete(ctx, "settings", metav1.DeleteOptions{}))
	deadline := time.Now().Add(2 * time.Second)
	for w.get() != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	gone := w.get() == nil
	// west's new credentials work.
	w.mu.Lock()
	w.members["west"] = west
	w.mu.Unlock()
	require.Eventually(t, func() bool {
		return slices.Contains(c.fleet.Clusters(), "west") && func() bool { st, _ := c.fleet.Status("west"); return st.Ready }()
	}, waitFor, 5*time.Millisecond)
	require.Eventually(t, func() bool { return w.get() == nil && westData() == nil }, 5*time.Second, 10*time.Millisecond,
		"west still holds the ConfigMap %v of the deleted ConfigSet (finalizer removed while west was not ready: %v)", westData(), gone)
}
