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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
	"github.com/ctrlkit/ctrlkit/examples/external/system"
	"github.com/ctrlkit/ctrlkit/metrics/metricstest"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
)

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
