package multicluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// shardedWorld is a management cluster (for the Leases) and member
// clusters shared by replicas of one operator, with a reconciler that
// notes any cluster two replicas reconcile at once.
type shardedWorld struct {
	mgmt     *fake.Clientset
	clusters *clusters
	names    []string

	// hold is how long a reconcile takes unless cancelled (default a
	// millisecond); shutdown is the controllers' shutdown timeout
	// (default queue.DefaultShutdownTimeout); workers their workers
	// (default 4).
	hold, shutdown time.Duration
	workers        int

	mu       sync.Mutex
	holding  map[string]string // cluster -> replica reconciling one of its keys now
	overlaps []string
	causes   []error // of the reconciles cancelled
}

type shardedReplica struct {
	fleet *multicluster.Fleet[*member]
	stop  func()
}

func (w *shardedWorld) start(t *testing.T, id string) *shardedReplica {
	m, err := shard.New(shard.Config{Client: w.mgmt, Namespace: "fleet-system", Group: "copier", Identity: id,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 250 * time.Millisecond})
	require.NoError(t, err)
	p := newProvider()
	var ctrl *queue.Controller[multicluster.Key]
	engage := func(ctx context.Context, cl *multicluster.Cluster) (*member, error) {
		cms := cl.Informers.Core().V1().ConfigMaps()
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cl.Queue(ctrl)), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		return &member{name: cl.Name, client: cl.Client, configMaps: cms.Lister()}, nil
	}
	fleet, err := multicluster.New("copier", p, engage, multicluster.WithSharding(m), multicluster.WithClients(w.clusters.newClient))
	require.NoError(t, err)
	r := func(ctx context.Context, _ *member, key multicluster.Key) (reconcile.Result, error) {
		w.mu.Lock()
		if other, held := w.holding[key.Cluster]; held && other != id {
			w.overlaps = append(w.overlaps, fmt.Sprintf("%s reconciled %s while %s held it", id, key, other))
		}
		w.holding[key.Cluster] = id
		w.mu.Unlock()
		hold := w.hold
		if hold == 0 {
			hold = time.Millisecond
		}
		select {
		case <-time.After(hold):
		case <-ctx.Done():
			w.mu.Lock()
			w.causes = append(w.causes, context.Cause(ctx))
			w.mu.Unlock()
		}
		w.mu.Lock()
		if w.holding[key.Cluster] == id {
			delete(w.holding, key.Cluster)
		}
		w.mu.Unlock()
		return reconcile.Result{}, nil
	}
	workers := w.workers
	if workers == 0 {
		workers = 4
	}
	queueOpts := []queue.Option{queue.WithWorkers(workers)}
	if w.shutdown > 0 {
		queueOpts = append(queueOpts, queue.WithShutdownTimeout(w.shutdown))
	}
	ctrl, err = multicluster.NewController(fleet, "copier", r, queueOpts...)
	require.NoError(t, err)
	// Every 50ms, every key of every cluster: keys of clusters this
	// replica does not hold are dropped.
	require.NoError(t, ctrl.Watch(queue.Periodic(ctrl, 50*time.Millisecond, func(context.Context) ([]multicluster.Key, error) {
		keys := make([]multicluster.Key, 0, len(w.names))
		for _, name := range w.names {
			keys = append(keys, key(name))
		}
		return keys, nil
	})))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// The membership stops once the fleet and its controller have, as
	// operator.WithSharding runs it.
	memberCtx, stopMember := context.WithCancel(context.Background())
	memberDone := make(chan struct{})
	go func() {
		defer close(memberDone)
		assert.NoError(t, m.Run(memberCtx))
	}()
	wg.Go(func() { assert.NoError(t, fleet.Run(ctx)) })
	wg.Go(func() { assert.NoError(t, ctrl.Run(ctx)) })
	members := <-p.members
	for _, name := range w.names {
		members.Set(name, w.clusters.config(name))
	}
	members.Synced()
	var once sync.Once
	rep := &shardedReplica{fleet: fleet, stop: func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			stopMember()
			<-memberDone
		})
	}}
	t.Cleanup(rep.stop)
	return rep
}

// Two replicas divide the clusters between them (the second joining while
// the first holds them all), never both reconcile the keys of one cluster
// at once, and when one stops the other takes its clusters over.
func TestShardedClusters(t *testing.T) {
	w := &shardedWorld{mgmt: fake.NewClientset(), holding: map[string]string{}}
	for i := range 8 {
		w.names = append(w.names, fmt.Sprintf("member-%d", i))
	}
	w.clusters = newClusters(w.names...)
	a := w.start(t, "a")
	require.Eventually(t, func() bool { return slices.Equal(a.fleet.Clusters(), w.names) }, waitFor, 20*time.Millisecond,
		"the first replica takes every cluster")
	// The second one joins: the clusters it gets move while engaged.
	b := w.start(t, "b")
	divided := func() bool {
		ca, cb := a.fleet.Clusters(), b.fleet.Clusters()
		all := slices.Sorted(slices.Values(append(slices.Clone(ca), cb...)))
		return len(ca) > 0 && len(cb) > 0 && slices.Equal(all, w.names)
	}
	require.Eventually(t, divided, waitFor, 20*time.Millisecond, "the replicas divide the clusters")
	// Memory divides with them: each replica started informers only for
	// its own clusters.
	for _, name := range w.names {
		_, inA := a.fleet.Get(name)
		_, inB := b.fleet.Get(name)
		assert.False(t, inA && inB, "cluster %s engaged by both replicas", name)
	}
	a.stop()
	require.Eventually(t, func() bool { return slices.Equal(b.fleet.Clusters(), w.names) }, waitFor, 20*time.Millisecond,
		"the remaining replica takes every cluster")
	require.Eventually(t, func() bool {
		for _, name := range w.names {
			if st, _ := b.fleet.Status(name); !st.Ready {
				return false
			}
		}
		return true
	}, waitFor, 20*time.Millisecond)
	b.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Empty(t, w.overlaps)
}
