package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
	"github.com/ctrlkit/ctrlkit/examples/external/system"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ns = "targets"

// fixture runs the Target controller over a strict fake clientset.
type fixture struct {
	system   *system.System
	kube     *fake.Clientset
	recorder *eventstest.Recorder
	// wait waits until the controller is idle.
	wait func()
}

func start(t *testing.T, resync time.Duration, capacity int, entries map[string]map[string]string, objects ...*corev1.ConfigMap) *fixture {
	t.Helper()
	f := &fixture{system: system.New(entries, capacity), kube: fake.NewClientset(), recorder: eventstest.NewRecorder()}
	reconciletest.Strict(f.kube)
	for _, cm := range objects {
		_, err := f.kube.CoreV1().ConfigMaps(cm.Namespace).Create(context.Background(), cm, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(f.kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = managedSelector.String() }))
	ctrl, err := newController(f.system, f.kube, factory.Core().V1().ConfigMaps(), f.recorder, ns, resync)
	require.NoError(t, err)
	queuetest.Start(t, ctrl, operator.WithInformers(factory))
	f.wait = func() { queuetest.WaitIdle(t, ctrl, f.kube) }
	return f
}

func (f *fixture) target(t *testing.T, name string) (*corev1.ConfigMap, bool) {
	t.Helper()
	cm, err := f.kube.CoreV1().ConfigMaps(ns).Get(context.Background(), targetPrefix+name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	return cm, true
}

func TestTargetsFollowTheSystem(t *testing.T) {
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: targetPrefix + "theirs"}, Data: map[string]string{"k": "mine"}}
	f := start(t, time.Hour, 16, map[string]map[string]string{"web": {"color": "blue"}, "theirs": {"k": "v"}}, theirs)
	f.wait()

	web, ok := f.target(t, "web")
	require.True(t, ok, "a Target per entry")
	assert.Equal(t, map[string]string{"color": "blue"}, web.Data)
	assert.Equal(t, managerName, web.Labels[managedBy])
	eventstest.RequireEvent(t, f.recorder, corev1.EventTypeNormal, ReasonSynced)
	other, _ := f.target(t, "theirs")
	assert.Equal(t, map[string]string{"k": "mine"}, other.Data, "a ConfigMap it does not manage is left alone")

	// A change and a new entry, notified on the channel.
	f.system.Set("web", map[string]string{"color": "green"})
	f.system.Set("db", map[string]string{"size": "10"})
	f.wait()
	web, _ = f.target(t, "web")
	assert.Equal(t, map[string]string{"color": "green"}, web.Data)
	db, ok := f.target(t, "db")
	require.True(t, ok)
	assert.Equal(t, map[string]string{"size": "10"}, db.Data)

	// An edit of the Target is undone.
	db.Data["size"] = "99"
	_, err := f.kube.CoreV1().ConfigMaps(ns).Update(context.Background(), db, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.wait()
	db, _ = f.target(t, "db")
	assert.Equal(t, "10", db.Data["size"], "the Target is corrected")

	// An entry that goes takes its Target with it.
	f.system.Delete("web")
	f.wait()
	_, ok = f.target(t, "web")
	assert.False(t, ok)
}

// Notifications that are lost (a full channel here) are caught up by the
// periodic resync.
func TestResyncCatchesUp(t *testing.T) {
	f := start(t, 20*time.Millisecond, 1, map[string]map[string]string{"a": {"v": "1"}})
	f.wait()
	for i, v := range []string{"2", "3", "4", "5"} { // one notification fits, the others are dropped
		f.system.Set("a", map[string]string{"v": v})
		f.system.Set("b"+string(rune('0'+i)), map[string]string{"v": v})
	}
	require.Eventually(t, func() bool {
		a, _ := f.target(t, "a")
		_, b3 := f.target(t, "b3")
		return a != nil && a.Data["v"] == "5" && b3
	}, queuetest.Timeout, time.Millisecond, "the resync finds what the notifications missed")
}
