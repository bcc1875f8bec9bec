package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	fleetfake "github.com/ctrlkit/ctrlkit/examples/configset/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/examples/configset/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// docs/multicluster.md: "Forget(key) drops a hub key's results once its
// object is gone". The ConfigSet operator forgets them only in its
// finalizer's cleanup: a ConfigSet that goes without it (its finalizer
// removed by hand, as users do with a deletion stuck on a member that
// does not answer, which cleanup now waits for whatever the spec says)
// leaves its results in memory for as long as the operator runs; the
// reconcile of its key that finds it gone forgets nothing.
func TestConfigSetResultsForgottenWhenGoneWithoutCleanup(t *testing.T) {
	ctx := context.Background()
	w := &world{mgmt: fleetfake.NewClientset(), events: record.NewFakeRecorder(100), members: map[string]*fake.Clientset{"east": newMember(), "west": nil}}
	w.report.Set("east", &rest.Config{Host: "https://east"})
	w.report.Set("west", &rest.Config{Host: "https://west"}) // it does not answer
	w.report.Synced()
	reconciletest.Strict(w.mgmt)
	factory := externalversions.NewSharedInformerFactory(w.mgmt, 0)
	c, err := newConfigSets(w.mgmt, factory.Fleet().V1alpha1().ConfigSets(), w.events, &w.report,
		[]multicluster.Option{multicluster.WithClients(w.client), multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond),
			multicluster.WithProbeInterval(time.Second)})
	require.NoError(t, err)
	queuetest.StartFleet(t, c.fleet, []queuetest.Controller{c.hub}, operator.WithInformers(factory))

	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Create(ctx, configSet("blue", "east"), metav1.CreateOptions{})
	require.NoError(t, err)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied}, "True/"+multicluster.ReasonAllMembersReady)
	key := cache.ObjectName{Namespace: "app", Name: "settings"}
	_, kept := c.results.Get(key, "east")
	require.True(t, kept)

	// The ConfigSet is deleted: its cleanup waits for west, which does
	// not answer; its finalizer is removed by hand, and it is gone.
	require.NoError(t, w.mgmt.FleetV1alpha1().ConfigSets("app").Delete(ctx, "settings", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return w.data("east") == nil }, waitFor, 5*time.Millisecond, "east cleaned up")
	time.Sleep(100 * time.Millisecond)
	cs := w.get()
	require.NotNil(t, cs, "the deletion waits for west")
	require.NotNil(t, cs.DeletionTimestamp)
	cs.Finalizers = nil
	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Update(ctx, cs, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return w.get() == nil }, waitFor, 5*time.Millisecond)

	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, kept = c.results.Get(key, "east"); !kept {
			return
		}
	}
	res, _ := c.results.Get(key, "east")
	t.Fatalf("2s after ConfigSet %s is gone, Results still keeps east's result %+v for it", key, res)
}
