package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// The operator restarts (a new version, a failover) while nothing changed:
// the ConfigSet's status says Ready, every member holds its ConfigMap.
// The ConfigSet is reconciled as soon as its informer synced, before the
// Fleet has learnt its members from their Secrets (listing them and
// engaging each takes a moment): no status is written until the Fleet
// synced, and then none, as nothing changed. A restart neither flaps the
// status to Unknown nor Warns.
func TestRestartKeepsReadyStatusBeforeFleetSynced(t *testing.T) {
	ctx := context.Background()
	w := &world{mgmt: fleetfake.NewClientset(), events: record.NewFakeRecorder(100), members: map[string]*fake.Clientset{"east": newMember()}}
	reconciletest.Strict(w.mgmt)
	// What the previous run left: east holds the ConfigMap, the status says so.
	_, err := w.member("east").CoreV1().ConfigMaps("app").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings",
		Labels: map[string]string{fleetv1alpha1.LabelManagedBy: fleetv1alpha1.ManagedBy}}, Data: map[string]string{"color": "blue"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cs := configSet("blue")
	cs.Finalizers = []string{fleetv1alpha1.Finalizer}
	cs, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Create(ctx, cs, metav1.CreateOptions{})
	require.NoError(t, err)
	gen := cs.Generation
	cs.Status = fleetv1alpha1.ConfigSetStatus{ObservedGeneration: gen, ReadyMembers: 1, TotalMembers: 1,
		Members: []multicluster.MemberStatus{{Cluster: "east", Ready: true, Reason: fleetv1alpha1.ReasonApplied, ObservedGeneration: gen}},
		Conditions: []metav1.Condition{{Type: multicluster.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: gen,
			LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour)).Rfc3339Copy(), Reason: multicluster.ReasonAllMembersReady, Message: "1 of 1 members ready"}}}
	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").UpdateStatus(ctx, cs, metav1.UpdateOptions{})
	require.NoError(t, err)
	w.mgmt.ClearActions()

	// The operator starts; its Provider lists the Secrets a moment later.
	factory := externalversions.NewSharedInformerFactory(w.mgmt, 0)
	c, err := newConfigSets(w.mgmt, factory.Fleet().V1alpha1().ConfigSets(), w.events, &w.report,
		[]multicluster.Option{multicluster.WithClients(w.client), multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond),
			multicluster.WithProbeInterval(time.Hour)})
	require.NoError(t, err)
	go func() {
		time.Sleep(time.Second)
		w.report.Set("east", &rest.Config{Host: "https://east"})
		w.report.Synced()
	}()
	queuetest.StartFleet(t, c.fleet, []queuetest.Controller{c.hub}, operator.WithInformers(factory))
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied}, "True/"+multicluster.ReasonAllMembersReady)
	time.Sleep(500 * time.Millisecond) // settled

	writes, warnings := w.statusWrites()
	require.Empty(t, writes, "a restart with nothing changed writes the status (events: %q)", warnings)
}

// statusWrites returns the ConfigSet status writes the management cluster
// saw (each as its condition's status and reason, and its entries) and the
// events recorded, which it takes.
func (w *world) statusWrites() (writes, events []string) {
	for _, a := range w.mgmt.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" {
			s := u.GetObject().(*fleetv1alpha1.ConfigSet).Status
			writes = append(writes, fmt.Sprintf("%s/%s %+v", s.Conditions[0].Status, s.Conditions[0].Reason, s.Members))
		}
	}
	for len(w.events.Events) > 0 {
		events = append(events, <-w.events.Events)
	}
	return writes, events
}
