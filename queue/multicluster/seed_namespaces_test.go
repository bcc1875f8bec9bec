package multicluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// An engage function that watches a set of namespaces, one factory per
// namespace (as controller-runtime's multi-namespace cache does), ranges
// over its set in whatever order Go gives: the factories' places differ
// from one attempt to the next. Each informer is seeded from the factory
// that lists the same namespace, wherever it stood: no object that still
// exists is reported deleted.
func TestSeedReportsNoExistingObjectDeleted(t *testing.T) {
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
