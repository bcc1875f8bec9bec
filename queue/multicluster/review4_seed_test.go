package multicluster_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// An engage function that watches a set of namespaces, one factory per
// namespace (as controller-runtime's multi-namespace cache does), ranges
// over its set in whatever order Go gives: the factories' places differ
// from one attempt to the next. Seeding by place then gives one
// namespace's informer the objects of another, and its first list
// reports every object of the other namespace as deleted
// (cache.DeletedFinalStateUnknown), although each still exists: the
// docs promise that an object still there reaches the handlers as an
// update.
func TestReview4SeedReportsNoExistingObjectDeleted(t *testing.T) {
	c := newClusters("a")
	require.NoError(t, c.clients["a"].Tracker().Add(configMap("other", "config", "a")))
	var mu sync.Mutex
	var deleted []string // the objects the handlers were told are deleted
	engage := func(_ context.Context, cl *multicluster.Cluster, _ *queue.Controller[multicluster.Key]) (*member, error) {
		// The order a map of namespaces gives: here fixed per
		// credentials, so that the test is deterministic.
		namespaces := []string{"app", "other"}
		if cl.Config.BearerToken == "two" {
			namespaces = []string{"other", "app"}
		}
		for _, ns := range namespaces {
			fac := informers.NewSharedInformerFactoryWithOptions(cl.Client, 0, informers.WithNamespace(ns))
			if _, err := fac.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
				DeleteFunc: func(obj any) {
					key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
					mu.Lock()
					deleted = append(deleted, key)
					mu.Unlock()
				},
			}); err != nil {
				return nil, err
			}
			cl.AddInformers(fac)
		}
		return &member{name: cl.Name, client: cl.Client}, nil
	}
	f := runFleet(t, engage, reconcileNothing, multicluster.WithClients(c.newClient))
	one := c.config("a")
	one.BearerToken = "one"
	f.members.Set("a", one)
	f.members.Synced()
	f.ready(t, "a")

	// New credentials: the cluster is engaged again, nothing is deleted.
	two := c.config("a")
	two.BearerToken = "two"
	f.members.Set("a", two)
	require.Eventually(t, func() bool {
		st, _ := f.fleet.Status("a")
		return st.Ready && c.tokenOf("a") == "two"
	}, waitFor, time.Millisecond)
	time.Sleep(200 * time.Millisecond) // the first list's notifications reach the handlers
	_, err := c.clients["a"].CoreV1().ConfigMaps("app").Get(context.Background(), "settings", metav1.GetOptions{})
	require.NoError(t, err, "app/settings still exists")
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, deleted, "objects reported deleted although they exist in the member")
	assert.NoError(t, f.stop(t, waitFor))
}

// A single-cluster informer's relist asks for a list not older than what
// it saw (the reflector's last synced resourceVersion), so it never
// reports a live object as deleted. The informer of a new attempt is
// fresh: when it lists (a member whose API server does not serve
// watch-list streams, client-go's WatchListClient turned off, or a fake
// clientset; with a watch-list stream the first sync is consistent) its
// first list asks for resourceVersion "0", which the API server may
// answer from a watch cache that is behind (another API server of the
// member, say, after a rotation or a network fault). Seeded
// with the previous attempt's objects, that list reports an object
// created shortly before, which the previous informer saw, as deleted
// (cache.DeletedFinalStateUnknown), although it exists: the docs promise
// the seeded list reports what changed "as a single-cluster informer's
// relist does".
func TestReview4SeedReportsNoLiveObjectDeletedFromAStaleList(t *testing.T) {
	c := newClusters("a")
	var stale atomic.Bool
	var rvs sync.Map // the resourceVersions the lists asked for
	// A list at resourceVersion "0" may be served by a watch cache that
	// has not yet seen app/fresh.
	c.clients["a"].PrependReactor("list", "configmaps", func(action k8stesting.Action) (bool, runtime.Object, error) {
		rv := action.(k8stesting.ListActionImpl).ListOptions.ResourceVersion
		rvs.Store(rv, true)
		if !stale.Load() || rv != "0" {
			return false, nil, nil
		}
		return true, &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"},
			Items: []corev1.ConfigMap{*configMap("app", "settings", "a")}}, nil
	})
	var mu sync.Mutex
	var deleted []string
	engage := func(_ context.Context, cl *multicluster.Cluster, _ *queue.Controller[multicluster.Key]) (*member, error) {
		if _, err := cl.Informers.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj any) {
				key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
				mu.Lock()
				deleted = append(deleted, key)
				mu.Unlock()
			},
		}); err != nil {
			return nil, err
		}
		return &member{name: cl.Name, client: cl.Client}, nil
	}
	f := runFleet(t, engage, reconcileNothing, multicluster.WithClients(c.newClient))
	one := c.config("a")
	one.BearerToken = "one"
	f.members.Set("a", one)
	f.members.Synced()
	f.ready(t, "a")
	m, ok := f.fleet.Get("a")
	require.True(t, ok)
	_, err := m.client.CoreV1().ConfigMaps("app").Create(context.Background(), configMap("app", "fresh", "a"), metav1.CreateOptions{})
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // the informer sees it

	stale.Store(true)
	two := c.config("a")
	two.BearerToken = "two"
	f.members.Set("a", two)
	require.Eventually(t, func() bool {
		st, _ := f.fleet.Status("a")
		return st.Ready && c.tokenOf("a") == "two"
	}, waitFor, time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	_, err = c.clients["a"].CoreV1().ConfigMaps("app").Get(context.Background(), "fresh", metav1.GetOptions{})
	require.NoError(t, err, "app/fresh exists")
	_, askedAny := rvs.Load("0")
	require.True(t, askedAny, "the new attempt's informer listed at resourceVersion 0")
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, deleted, "live objects reported deleted by the seeded informer's first list")
	assert.NoError(t, f.stop(t, waitFor))
}
