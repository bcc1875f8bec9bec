package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	fleetfake "github.com/ctrlkit/ctrlkit/examples/configset/generated/clientset/versioned/fake"
	"github.com/ctrlkit/ctrlkit/examples/configset/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

const waitFor = 30 * time.Second

// world is a management cluster and its members, fakes all; a member
// without a fake does not answer.
type world struct {
	mgmt   *fleetfake.Clientset
	events *record.FakeRecorder
	report queuetest.Provider

	mu      sync.Mutex
	members map[string]*fake.Clientset
}

// start runs the operator with a member of each name, reported and synced.
func start(t *testing.T, names ...string) *world {
	w := &world{mgmt: fleetfake.NewClientset(), events: record.NewFakeRecorder(100), members: map[string]*fake.Clientset{}}
	for _, name := range names {
		w.members[name] = newMember()
		w.report.Set(name, &rest.Config{Host: "https://" + name})
	}
	w.report.Synced()
	reconciletest.Strict(w.mgmt)
	factory := externalversions.NewSharedInformerFactory(w.mgmt, 0)
	c, err := newConfigSets(w.mgmt, factory.Fleet().V1alpha1().ConfigSets(), w.events, &w.report,
		[]multicluster.Option{multicluster.WithClients(w.client), multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond),
			multicluster.WithProbeInterval(time.Second)})
	require.NoError(t, err)
	queuetest.StartFleet(t, c.fleet, []queuetest.Controller{c.hub}, operator.WithInformers(factory))
	return w
}

// newMember returns a member's fake API server.
func newMember() *fake.Clientset {
	c := fake.NewClientset()
	reconciletest.Strict(c)
	return c
}

func (w *world) client(_ context.Context, name string, _ *rest.Config) (kubernetes.Interface, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c := w.members[name]; c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("dial tcp: lookup %s: no such host", name)
}

func (w *world) member(name string) *fake.Clientset {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.members[name]
}

// data returns the data of the member's ConfigMap, nil if it has none.
func (w *world) data(member string) map[string]string {
	cm, err := w.member(member).CoreV1().ConfigMaps("app").Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return cm.Data
}

// status returns the ConfigSet's per-member reasons and its Ready
// condition's status and reason.
func (w *world) status() (map[string]string, string) {
	cs, err := w.mgmt.FleetV1alpha1().ConfigSets("app").Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil || cs.Status.ObservedGeneration != cs.Generation {
		return nil, ""
	}
	reasons, ready := map[string]string{}, ""
	for _, m := range cs.Status.Members {
		reasons[m.Cluster] = m.Reason
	}
	for _, c := range cs.Status.Conditions {
		ready = string(c.Status) + "/" + c.Reason
	}
	return reasons, ready
}

func (w *world) eventually(t *testing.T, reasons map[string]string, ready string) {
	t.Helper()
	require.Eventually(t, func() bool { got, r := w.status(); return assert.ObjectsAreEqual(reasons, got) && r == ready },
		waitFor, 5*time.Millisecond, "want %v %s, have %+v", reasons, ready, w.get())
}

func (w *world) get() *fleetv1alpha1.ConfigSet {
	cs, err := w.mgmt.FleetV1alpha1().ConfigSets("app").Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return cs
}

func configSet(data string, members ...string) *fleetv1alpha1.ConfigSet {
	return &fleetv1alpha1.ConfigSet{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"},
		Spec: fleetv1alpha1.ConfigSetSpec{Data: map[string]string{"color": data}, Members: members}}
}

func TestConfigSetAppliedToEveryMemberAndCleanedUp(t *testing.T) {
	ctx := context.Background()
	w := start(t, "east", "west")
	_, err := w.mgmt.FleetV1alpha1().ConfigSets("app").Create(ctx, configSet("blue"), metav1.CreateOptions{})
	require.NoError(t, err)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": fleetv1alpha1.ReasonApplied}, "True/"+multicluster.ReasonAllMembersReady)
	for _, m := range []string{"east", "west"} {
		assert.Equal(t, map[string]string{"color": "blue"}, w.data(m), m)
	}
	cs, err := w.mgmt.FleetV1alpha1().ConfigSets("app").Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), cs.Status.ReadyMembers)
	assert.Equal(t, int32(2), cs.Status.TotalMembers)
	assert.Contains(t, cs.Finalizers, fleetv1alpha1.Finalizer)

	// A change of the spec reaches the members it names, and leaves the others.
	cs = cs.DeepCopy()
	cs.Spec = configSet("green", "east").Spec
	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Update(ctx, cs, metav1.UpdateOptions{})
	require.NoError(t, err)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied}, "True/"+multicluster.ReasonAllMembersReady)
	assert.Equal(t, map[string]string{"color": "green"}, w.data("east"))
	require.Eventually(t, func() bool { return w.data("west") == nil }, waitFor, 5*time.Millisecond, "removed from the member no longer named")

	// A deletion removes the ConfigMaps, then the finalizer.
	require.NoError(t, w.mgmt.FleetV1alpha1().ConfigSets("app").Delete(ctx, "settings", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return w.get() == nil }, waitFor, 5*time.Millisecond, "the finalizer goes")
	assert.Nil(t, w.data("east"))
}

func TestConfigSetLeavesOthersConfigMapsAlone(t *testing.T) {
	ctx := context.Background()
	w := start(t, "east", "west")
	_, err := w.member("east").CoreV1().ConfigMaps("app").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"},
		Data: map[string]string{"color": "theirs"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = w.mgmt.FleetV1alpha1().ConfigSets("app").Create(ctx, configSet("blue"), metav1.CreateOptions{})
	require.NoError(t, err)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonConflict, "west": fleetv1alpha1.ReasonApplied}, "False/"+multicluster.ReasonMembersNotReady)
	assert.Equal(t, map[string]string{"color": "theirs"}, w.data("east"))
	assert.Contains(t, <-w.events.Events, "Warning "+multicluster.ReasonMembersNotReady)
}

func TestConfigSetReportsUnreachableMembers(t *testing.T) {
	ctx := context.Background()
	w := start(t, "east")
	_, err := w.mgmt.FleetV1alpha1().ConfigSets("app").Create(ctx, configSet("blue"), metav1.CreateOptions{})
	require.NoError(t, err)
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied}, "True/"+multicluster.ReasonAllMembersReady)

	w.report.Set("west", &rest.Config{Host: "https://west"}) // no client: unreachable
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": multicluster.ReasonUnreachable}, "False/"+multicluster.ReasonMembersUnreachable)

	w.mu.Lock()
	w.members["west"] = newMember() // answers now
	w.mu.Unlock()
	w.eventually(t, map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": fleetv1alpha1.ReasonApplied}, "True/"+multicluster.ReasonAllMembersReady)
	assert.Equal(t, map[string]string{"color": "blue"}, w.data("west"))
}
