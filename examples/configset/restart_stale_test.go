package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
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

// gatedWatchClient is a member client whose ConfigMap watches deliver
// nothing until gate is closed: the member's informer is behind the API
// server, as after any write it has not been told of yet.
type gatedWatchClient struct {
	kubernetes.Interface
	gate <-chan struct{}
}

// IsWatchListSemanticsUnSupported is the fake clientset's: its informers
// list, then watch.
func (c gatedWatchClient) IsWatchListSemanticsUnSupported() bool { return true }

func (c gatedWatchClient) CoreV1() typedcorev1.CoreV1Interface {
	return gatedCore{CoreV1Interface: c.Interface.CoreV1(), gate: c.gate}
}

type gatedCore struct {
	typedcorev1.CoreV1Interface
	gate <-chan struct{}
}

func (c gatedCore) ConfigMaps(ns string) typedcorev1.ConfigMapInterface {
	return gatedConfigMaps{ConfigMapInterface: c.CoreV1Interface.ConfigMaps(ns), gate: c.gate}
}

type gatedConfigMaps struct {
	typedcorev1.ConfigMapInterface
	gate <-chan struct{}
}

func (c gatedConfigMaps) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	inner, err := c.ConfigMapInterface.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	g := &gatedWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go g.run(c.gate)
	return g, nil
}

type gatedWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func (g *gatedWatch) run(gate <-chan struct{}) {
	defer close(g.out)
	for ev := range g.inner.ResultChan() {
		select {
		case <-gate:
		case <-g.stop:
			return
		}
		select {
		case g.out <- ev:
		case <-g.stop:
			return
		}
	}
}

func (g *gatedWatch) Stop() {
	g.once.Do(func() { close(g.stop); g.inner.Stop() })
}

func (g *gatedWatch) ResultChan() <-chan watch.Event { return g.out }

// The operator restarts with both members ready at the Fleet's first
// sync, and the status from before says both are Applied. The walk's
// write of east meets a change made meanwhile that east's informer has
// not delivered yet: Ensure answers ErrStaleCache and configset sets no
// result for east ("retried at once, no result"). Status then lists
// east, ready at the first sync with no result yet, Pending, and
// configset would write it: Ready True -> False (MembersNotReady, a
// Warning) -> True once the retry reports. Results.Reported, asked after
// the walk, holds the write back until east reports.
func TestRestartKeepsReadyStatusWhenAMemberWriteMeetsAStaleCache(t *testing.T) {
	ctx := context.Background()
	east := fake.NewClientset()
	eastAPI := reconciletest.Strict(east)
	w := &world{mgmt: fleetfake.NewClientset(), events: record.NewFakeRecorder(100), members: map[string]*fake.Clientset{"east": east, "west": newMember()}}
	reconciletest.Strict(w.mgmt)
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

	// east's ConfigMap watch delivers nothing until gate closes (half a
	// second after the walk's first write of east).
	gate := make(chan struct{})
	var gateOnce, editOnce sync.Once
	open := func() { gateOnce.Do(func() { close(gate) }) }
	t.Cleanup(open)
	// Someone edits east's ConfigMap just as the walk writes it.
	east.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		editOnce.Do(func() {
			obj, err := eastAPI.Tracker(east).Get(corev1.SchemeGroupVersion.WithResource("configmaps"), "app", "settings")
			if err == nil {
				cm := obj.(*corev1.ConfigMap).DeepCopy()
				cm.Data = map[string]string{"color": "green"}
				err = eastAPI.Tracker(east).Update(corev1.SchemeGroupVersion.WithResource("configmaps"), cm, "app")
			}
			if err != nil {
				t.Errorf("editing east: %v", err)
			}
			// The informer catches up a moment later (the test passes without
			// making the race if the status is written after that).
			time.AfterFunc(500*time.Millisecond, open)
		})
		return false, nil, nil
	})
	clients := func(ctx context.Context, name string, cfg *rest.Config) (kubernetes.Interface, error) {
		c, err := w.client(ctx, name, cfg)
		if err != nil || name != "east" {
			return c, err
		}
		return gatedWatchClient{Interface: c, gate: gate}, nil
	}
	w.report.Set("east", &rest.Config{Host: "https://east"})
	w.report.Set("west", &rest.Config{Host: "https://west"})
	w.report.Synced()
	factory := externalversions.NewSharedInformerFactory(w.mgmt, 0)
	c, err := newConfigSets(w.mgmt, factory.Fleet().V1alpha1().ConfigSets(), w.events, &w.report,
		[]multicluster.Option{multicluster.WithClients(clients), multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond),
			multicluster.WithProbeInterval(time.Hour)})
	require.NoError(t, err)
	queuetest.StartFleet(t, c.fleet, []queuetest.Controller{c.hub}, operator.WithInformers(factory))

	key := cache.MetaObjectToName(cs)
	require.Eventually(t, func() bool {
		_, e := c.results.Get(key, "east")
		_, wst := c.results.Get(key, "west")
		return e && wst && w.data("east")["color"] == "blue"
	}, waitFor, 5*time.Millisecond)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": fleetv1alpha1.ReasonApplied}, "True/"+multicluster.ReasonAllMembersReady)

	writes, warnings := w.statusWrites()
	require.Empty(t, writes, "a restart whose walk met a stale cache in east (ready at the first sync) writes the status (events: %q)", warnings)
}
