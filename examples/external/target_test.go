package main

import (
	"bytes"
	"context"
	"flag"
	"io"
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
	"github.com/ctrlkit/ctrlkit/metrics/metricstest"
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

func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("external", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := bindFlags(fs)
	require.NoError(t, fs.Parse([]string{"--entry=web=color=blue,size=2", "--entry=empty=", "--namespace=ops"}))
	assert.Equal(t, system.Entries{"web": {"color": "blue", "size": "2"}, "empty": {}}, o.entries)
	assert.Equal(t, "ops", o.namespace)
	assert.Equal(t, "external-targets", o.LeaderElectID)

	for _, bad := range []string{"=k=v", "web=novalue"} {
		fs := flag.NewFlagSet("external", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		bindFlags(fs)
		assert.Error(t, fs.Parse([]string{"--entry=" + bad}), bad)
	}

	tests := []struct {
		args     []string
		wantCode int
		wantMsg  string
	}{
		{args: []string{"--help"}, wantCode: 0},
		{args: []string{"--no-such-flag"}, wantCode: 2, wantMsg: "flag provided but not defined"},
		{args: []string{"--workers=0"}, wantCode: 2, wantMsg: "--workers and --resync must be positive"},
		{args: []string{"--resync=0s"}, wantCode: 2, wantMsg: "--workers and --resync must be positive"},
		{args: []string{"--kubeconfig=/nonexistent", "--metrics-bind-address=0", "--health-probe-bind-address=0"}, wantCode: 1, wantMsg: "loading --kubeconfig /nonexistent"},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		assert.Equal(t, tt.wantCode, run(tt.args, &stderr), "%v: %s", tt.args, stderr.String())
		assert.Contains(t, stderr.String(), tt.wantMsg)
	}
}

// The flags hand the controller its metrics: with the default
// --metrics-bind-address, the options of ControllerOptions (which
// runOperator passes to newController) count its reconciles on the
// registry that the flags serve at /metrics.
func TestControllerOptionsCarryMetrics(t *testing.T) {
	fs := flag.NewFlagSet("external", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := bindFlags(fs)
	require.NoError(t, fs.Parse(nil))
	kube := fake.NewClientset()
	sys := system.New(map[string]map[string]string{"web": {"color": "blue"}}, 16)
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	ctrl, err := newController(sys, kube, factory.Core().V1().ConfigMaps(), eventstest.NewRecorder(), ns, time.Hour, o.ControllerOptions()...)
	require.NoError(t, err)
	queuetest.Start(t, ctrl, operator.WithInformers(factory))
	queuetest.WaitIdle(t, ctrl, kube)

	_, err = kube.CoreV1().ConfigMaps(ns).Get(context.Background(), targetPrefix+"web", metav1.GetOptions{})
	require.NoError(t, err, "the full sync at start creates the Target")
	created := metricstest.Value(t, o.Registry(), "controller_runtime_reconcile_total",
		map[string]string{"controller": "targets", "result": "success"})
	assert.GreaterOrEqual(t, created, 1.0, "the reconciles are counted on the flags' registry")
}
