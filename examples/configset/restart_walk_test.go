package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
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

// The operator restarts; east is engaged at once, west a moment later,
// and the Fleet syncs with west while a reconcile walks the members: the
// walk found west engaging (not ready, not walked), and by the time the
// status is built west is ready with no result yet. That is no change of
// west: the reconcile writes nothing, and the next one, which walks west,
// finds the status as it was. A restart neither flaps the status to
// Pending nor Warns.
func TestRestartKeepsReadyStatusWhenFleetSyncsDuringWalk(t *testing.T) {
	ctx := context.Background()
	w := &world{mgmt: fleetfake.NewClientset(), events: record.NewFakeRecorder(100), members: map[string]*fake.Clientset{"east": newMember(), "west": newMember()}}
	reconciletest.Strict(w.mgmt)
	// What the previous run left: both hold the ConfigMap (east's edited
	// by hand since), the status says both are Ready.
	for name, color := range map[string]string{"east": "red", "west": "blue"} {
		_, err := w.member(name).CoreV1().ConfigMaps("app").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings",
			Labels: map[string]string{fleetv1alpha1.LabelManagedBy: fleetv1alpha1.ManagedBy}}, Data: map[string]string{"color": color}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	cs := configSet("blue")
	cs.Finalizers = []string{fleetv1alpha1.Finalizer}
	cs, err := w.mgmt.FleetV1alpha1().ConfigSets("app").Create(ctx, cs, metav1.CreateOptions{})
	require.NoError(t, err)
	gen := cs.Generation
	cs.Status = fleetv1alpha1.ConfigSetStatus{ObservedGeneration: gen, ReadyMembers: 2, TotalMembers: 2,
		Members: []multicluster.MemberStatus{{Cluster: "east", Ready: true, Reason: fleetv1alpha1.ReasonApplied, ObservedGeneration: gen},
			{Cluster: "west", Ready: true, Reason: fleetv1alpha1.ReasonApplied, ObservedGeneration: gen}},
		Conditions: []metav1.Condition{{Type: multicluster.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: gen,
			LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour)).Rfc3339Copy(), Reason: multicluster.ReasonAllMembersReady, Message: "2 of 2 members ready"}}}
	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").UpdateStatus(ctx, cs, metav1.UpdateOptions{})
	require.NoError(t, err)
	w.mgmt.ClearActions()

	// west's client is built once east's ConfigMap is being written back,
	// and that write returns once the Fleet has synced with west: the
	// walk that writes east found west engaging.
	var c *configSets
	westGo := make(chan struct{})
	w.member("east").PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case <-westGo:
			return false, nil, nil
		default:
		}
		close(westGo)
		err := wait.PollUntilContextTimeout(ctx, time.Millisecond, waitFor, true, func(context.Context) (bool, error) { return c.fleet.HasSynced(), nil })
		return err != nil, nil, err
	})
	clients := func(ctx context.Context, name string, cfg *rest.Config) (kubernetes.Interface, error) {
		if name == "west" {
			select {
			case <-westGo:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return w.client(ctx, name, cfg)
	}
	w.report.Set("east", &rest.Config{Host: "https://east"})
	w.report.Set("west", &rest.Config{Host: "https://west"})
	w.report.Synced()
	factory := externalversions.NewSharedInformerFactory(w.mgmt, 0)
	c, err = newConfigSets(w.mgmt, factory.Fleet().V1alpha1().ConfigSets(), w.events, &w.report,
		[]multicluster.Option{multicluster.WithClients(clients), multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond),
			multicluster.WithProbeInterval(time.Hour)})
	require.NoError(t, err)
	queuetest.StartFleet(t, c.fleet, []queuetest.Controller{c.hub}, operator.WithInformers(factory))

	// Settled: east written back, and west walked since (its result kept).
	key := cache.MetaObjectToName(cs)
	require.Eventually(t, func() bool {
		_, east := c.results.Get(key, "east")
		_, west := c.results.Get(key, "west")
		return east && west && w.data("east")["color"] == "blue"
	}, waitFor, 5*time.Millisecond)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": fleetv1alpha1.ReasonApplied}, "True/"+multicluster.ReasonAllMembersReady)

	writes, warnings := w.statusWrites()
	require.Empty(t, writes, "a restart whose Fleet synced during a walk writes the status (events: %q)", warnings)
}
