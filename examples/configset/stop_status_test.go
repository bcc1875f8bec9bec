package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	fleetfake "github.com/ctrlkit/ctrlkit/examples/configset/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/examples/configset/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// The operator stops (a rolling update) while a ConfigSet's reconcile
// walks its members, one of them slow to answer. Nothing is wrong with
// any member: the status written by that reconcile must not say the
// members that stopped first are Unreachable (a Ready -> False transition
// with a Warning, undone by the next run), as the docs promise that a
// restart does not flap a status that still holds.
func TestStopDoesNotFlapReadyStatus(t *testing.T) {
	ctx := context.Background()
	w := &world{mgmt: fleetfake.NewClientset(), events: record.NewFakeRecorder(100), members: map[string]*fake.Clientset{}}
	var slow atomic.Bool
	blocked, release := make(chan struct{}), make(chan struct{})
	for _, name := range []string{"east", "west"} {
		c := fake.NewClientset()
		reconciletest.Strict(c)
		if name == "west" {
			c.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if (a.GetVerb() == "update" || a.GetVerb() == "patch") && slow.CompareAndSwap(true, false) {
					close(blocked)
					<-release
				}
				return false, nil, nil
			})
		}
		w.members[name] = c
		w.report.Set(name, &rest.Config{Host: "https://" + name})
	}
	w.report.Synced()
	reconciletest.Strict(w.mgmt)
	factory := externalversions.NewSharedInformerFactory(w.mgmt, 0)
	c, err := newConfigSets(w.mgmt, factory.Fleet().V1alpha1().ConfigSets(), w.events, &w.report,
		[]multicluster.Option{multicluster.WithClients(w.client), multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond),
			multicluster.WithProbeInterval(time.Second)})
	require.NoError(t, err)
	_, runCtx := ktesting.NewTestContext(t)
	runCtx, cancel := context.WithCancel(runCtx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(runCtx, operator.WithInformers(factory), operator.WithControllers(c.fleet, c.hub))
	}()

	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Create(ctx, configSet("blue"), metav1.CreateOptions{})
	require.NoError(t, err)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": fleetv1alpha1.ReasonApplied}, "True/"+multicluster.ReasonAllMembersReady)
	// The event of that transition is recorded after its write: wait for it.
	for ready := false; !ready; {
		select {
		case e := <-w.events.Events:
			ready = strings.Contains(e, multicluster.ReasonAllMembersReady)
		case <-time.After(waitFor):
			t.Fatal("no event of the transition to Ready")
		}
	}

	// A change: west's write hangs a moment, east's is done at once.
	slow.Store(true)
	cs := w.get().DeepCopy()
	cs.Spec.Data = map[string]string{"color": "green"}
	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Update(ctx, cs, metav1.UpdateOptions{})
	require.NoError(t, err)
	select {
	case <-blocked:
	case <-time.After(waitFor):
		t.Fatal("west's update never came")
	}
	cancel() // the operator stops while the reconcile waits for west
	require.Eventually(t, func() bool { st, _ := c.fleet.Status("east"); return !st.Ready }, waitFor, time.Millisecond, "east stopped")
	close(release)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("the operator did not stop")
	}

	got := w.get()
	var events []string
	for len(w.events.Events) > 0 {
		events = append(events, <-w.events.Events)
	}
	var conds []string
	for _, cond := range got.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s/%s: %s", cond.Status, cond.Reason, cond.Message))
	}
	require.NotContains(t, conds, "False/"+multicluster.ReasonMembersUnreachable+": 1 of 2 members not ready: east (Unreachable: not engaged yet)",
		"a stop wrote a healthy fleet's ConfigSet not Ready (members %+v, events %q)", got.Status.Members, events)
	require.Empty(t, events, "a stop Warned of a healthy fleet")
}
