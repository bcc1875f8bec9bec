package multicluster_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// The handlers of a cluster that is not ready yet (its caches still
// syncing) have their keys held by the Fleet, with their triggers kept by
// the traced controller. When the cluster leaves before it is ready, the
// held keys are dropped, and their triggers with them: they neither stay
// in the controller nor show up in the first reconcile of the key once
// the cluster joins again.
func TestTracingTriggersOfDroppedHeldKeysAreNotKept(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	c := newClusters("a")
	var secretsDown atomic.Bool
	secretsDown.Store(true)
	c.clients["a"].PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if secretsDown.Load() {
			return true, nil, errors.New("secrets not served yet")
		}
		return false, nil, nil
	})
	var reconciled atomic.Int32
	k := multicluster.Key{Cluster: "a", ObjectName: cacheName("app", "settings")}
	r := func(_ context.Context, _ *member, key multicluster.Key) (reconcile.Result, error) {
		if key == k {
			reconciled.Add(1)
		}
		return reconcile.Result{}, nil
	}
	p := newProvider()
	var ctrl *queue.Controller[multicluster.Key]
	recording := &triggerCounter{}
	engage := func(_ context.Context, cl *multicluster.Cluster) (*member, error) {
		cms := cl.Informers.Core().V1().ConfigMaps()
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(recording)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		cl.Informers.Core().V1().Secrets().Informer() // never syncs while secretsDown
		return &member{name: cl.Name, client: cl.Client, configMaps: cms.Lister()}, nil
	}
	fleet, err := multicluster.New("test", p, engage, multicluster.WithClients(c.newClient),
		multicluster.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond), multicluster.WithSyncTimeout(time.Hour))
	require.NoError(t, err)
	ctrl, err = multicluster.NewController(fleet, "configmaps", r, queue.WithTracing(tp))
	require.NoError(t, err)
	recording.Controller = ctrl
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { errs <- fleet.Run(ctx) }()
	go func() { errs <- ctrl.Run(ctx) }()
	defer func() {
		cancel()
		<-errs
		<-errs
	}()
	members := <-p.members

	// a joins; its ConfigMaps are listed (a key held, with its trigger),
	// its Secrets are not: it does not become ready, and then it leaves.
	members.Set("a", c.config("a"))
	members.Synced()
	require.Eventually(t, func() bool { return recording.count(k) > 0 }, waitFor, time.Millisecond)
	st, _ := fleet.Status("a")
	require.False(t, st.Ready)
	members.Delete("a")
	require.Eventually(t, func() bool { _, ok := fleet.Status("a"); return !ok }, waitFor, time.Millisecond)

	// a joins again, and is ready this time.
	secretsDown.Store(false)
	members.Set("a", c.config("a"))
	require.Eventually(t, func() bool { return reconciled.Load() > 0 }, waitFor, time.Millisecond)
	var span sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		for _, s := range sr.Ended() {
			for _, a := range s.Attributes() {
				if a.Key == tracing.AttrKey && a.Value.AsString() == k.String() {
					span = s
					return true
				}
			}
		}
		return false
	}, waitFor, time.Millisecond)
	var triggers int64 = -1
	for _, a := range span.Attributes() {
		if a.Key == tracing.AttrTriggers {
			triggers = a.Value.AsInt64()
		}
	}
	assert.Equal(t, int64(1), triggers, "the first reconcile after a joins again has only the trigger of its own initial list; links: %v", span.Links())
}

// triggerCounter is a controller that counts the triggers recorded for
// each key.
type triggerCounter struct {
	*queue.Controller[multicluster.Key]
	mu     sync.Mutex
	counts map[multicluster.Key]int
}

func (c *triggerCounter) Trigger(key multicluster.Key, t tracing.Trigger) {
	c.mu.Lock()
	if c.counts == nil {
		c.counts = map[multicluster.Key]int{}
	}
	c.counts[key]++
	c.mu.Unlock()
	c.Controller.Trigger(key, t)
}

func (c *triggerCounter) count(key multicluster.Key) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}
