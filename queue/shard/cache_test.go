package shard_test

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue/shard"
)

const appNS = "app"

var configMapKind = schema.GroupKind{Kind: "ConfigMap"}

// cachedReplica is a replica whose ConfigMap (key) and Secret (child)
// informers are sharded.
type cachedReplica struct {
	id      string
	m       *shard.Membership
	gate    *shard.Gate[cache.ObjectName]
	maps    cache.Store
	secrets cache.Store
	stop    context.CancelFunc
	done    chan error
}

func startCached(t *testing.T, client *fake.Clientset, id string) *cachedReplica {
	t.Helper()
	m, err := shard.New(fastConfig(client, id))
	require.NoError(t, err)
	factory := informers.NewSharedInformerFactory(client, 0)
	maps, secrets := client.CoreV1().ConfigMaps(""), client.CoreV1().Secrets("")
	require.NoError(t, shard.Informer[*corev1.ConfigMap](m, factory.InformerFor, maps.List, maps.Watch, shard.ByName))
	require.NoError(t, shard.Informer[*corev1.Secret](m, factory.InformerFor, secrets.List, secrets.Watch, shard.ByController(configMapKind)))
	r := &cachedReplica{id: id, m: m, done: make(chan error, 1),
		gate:    shard.NewGate(m, shard.ObjectNames(factory.Core().V1().ConfigMaps().TypedInformer())),
		maps:    factory.Core().V1().ConfigMaps().Informer().GetStore(),
		secrets: factory.Core().V1().Secrets().Informer().GetStore()}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.done <- m.Run(ctx) }()
	factory.Start(ctx.Done())
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			<-r.done
			factory.Shutdown()
		})
	}
	t.Cleanup(r.stop)
	return r
}

func configMap(i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: fmt.Sprintf("cm-%d", i), UID: types.UID(fmt.Sprint("uid-", i))}}
}

// childSecret returns the Secret of ConfigMap owner.
func childSecret(name string, owner *corev1.ConfigMap) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: name,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, corev1.SchemeGroupVersion.WithKind("ConfigMap"))}}}
}

func storeKeys(s cache.Store) []string {
	keys := s.ListKeys()
	slices.Sort(keys)
	return keys
}

// expectedCaches returns the ConfigMaps and Secrets r should hold: those
// of the keys it owns, and the Secrets without a ConfigMap controller.
func expectedCaches(r *cachedReplica, keys int, parent map[string]int) (maps, secrets []string) {
	for i := range keys {
		if r.gate.Owns(cache.ObjectName{Namespace: appNS, Name: fmt.Sprintf("cm-%d", i)}) {
			maps = append(maps, fmt.Sprintf("%s/cm-%d", appNS, i))
		}
	}
	for name, p := range parent {
		if p < 0 || slices.Contains(maps, fmt.Sprintf("%s/cm-%d", appNS, p)) {
			secrets = append(secrets, appNS+"/"+name)
		}
	}
	slices.Sort(maps)
	slices.Sort(secrets)
	return maps, secrets
}

// TestInformerCachesOwnedKeys runs a replica whose ConfigMap and Secret
// informers are sharded, then a second one, and checks that each holds
// exactly the ConfigMaps it owns, their Secrets and the Secret no
// ConfigMap controls (the first dropping what the second takes);
// that a Secret moved to another ConfigMap moves between the caches; and
// that when a replica leaves, the other owns each of its keys only once
// its caches hold that key's objects.
func TestInformerCachesOwnedKeys(t *testing.T) {
	t.Parallel()
	const keys = 24
	client := fake.NewClientset()
	parent := map[string]int{"loose": -1} // Secret -> index of its ConfigMap
	ctx := context.Background()
	for i := range keys {
		_, err := client.CoreV1().ConfigMaps(appNS).Create(ctx, configMap(i), metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = client.CoreV1().Secrets(appNS).Create(ctx, childSecret(fmt.Sprintf("s-%d", i), configMap(i)), metav1.CreateOptions{})
		require.NoError(t, err)
		parent[fmt.Sprintf("s-%d", i)] = i
	}
	_, err := client.CoreV1().Secrets(appNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "loose"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	var parentMu sync.Mutex
	a := startCached(t, client, "a")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		maps, secrets := expectedCaches(a, keys, parent)
		assert.Len(c, maps, keys, "a alone owns every key")
		assert.Equal(c, maps, storeKeys(a.maps))
		assert.Equal(c, secrets, storeKeys(a.secrets))
	}, waitFor, poll)
	// b joins: a drops what b takes.
	b := startCached(t, client, "b")
	split := func(c *assert.CollectT) {
		parentMu.Lock()
		defer parentMu.Unlock()
		var owned []string
		for _, r := range []*cachedReplica{a, b} {
			assert.Len(c, r.m.Members(), 2, r.id)
			maps, secrets := expectedCaches(r, keys, parent)
			assert.Equal(c, maps, storeKeys(r.maps), "%s's ConfigMaps", r.id)
			assert.Equal(c, secrets, storeKeys(r.secrets), "%s's Secrets", r.id)
			owned = append(owned, maps...)
		}
		assert.Len(c, owned, keys, "every key owned once")
		assert.Len(c, slices.Compact(slices.Sorted(slices.Values(owned))), keys)
	}
	require.EventuallyWithT(t, split, waitFor, poll)

	// Move a Secret of a's to a ConfigMap of b's.
	var from, to int = -1, -1
	for i := range keys {
		name := cache.ObjectName{Namespace: appNS, Name: fmt.Sprintf("cm-%d", i)}
		switch {
		case a.gate.Owns(name) && from < 0:
			from = i
		case b.gate.Owns(name) && to < 0:
			to = i
		}
	}
	require.True(t, from >= 0 && to >= 0, "each replica owns a key")
	moved := childSecret(fmt.Sprintf("s-%d", from), configMap(to))
	parentMu.Lock()
	parent[moved.Name] = to
	parentMu.Unlock()
	_, err = client.CoreV1().Secrets(appNS).Update(ctx, moved, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, split, waitFor, poll)

	// b leaves: a owns a key of b's only once it holds its objects.
	var violations []string
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		deadline := time.Now().Add(waitFor)
		for time.Now().Before(deadline) {
			maps, secrets := expectedCaches(a, keys, parent)
			heldMaps, heldSecrets := storeKeys(a.maps), storeKeys(a.secrets)
			for _, k := range maps {
				if !slices.Contains(heldMaps, k) {
					violations = append(violations, "owns "+k+" without it cached")
				}
			}
			for _, k := range secrets {
				if !slices.Contains(heldSecrets, k) {
					violations = append(violations, "owns the parent of "+k+" without it cached")
				}
			}
			if len(maps) == keys || len(violations) > 0 {
				return
			}
			time.Sleep(time.Millisecond) // sampling, not synchronisation
		}
	}()
	b.stop()
	<-watching
	assert.Empty(t, violations)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		maps, secrets := expectedCaches(a, keys, parent)
		assert.Len(c, maps, keys)
		assert.Equal(c, maps, storeKeys(a.maps))
		assert.Equal(c, secrets, storeKeys(a.secrets))
	}, waitFor, poll)
}

// TestInformerErrors checks the refusals of Informer and that a nil
// membership leaves the factory alone.
func TestInformerErrors(t *testing.T) {
	client := fake.NewClientset()
	m, err := shard.New(fastConfig(client, "a"))
	require.NoError(t, err)
	maps := client.CoreV1().ConfigMaps("")

	factory := informers.NewSharedInformerFactory(client, 0)
	require.NoError(t, shard.Informer[*corev1.ConfigMap]((*shard.Membership)(nil), factory.InformerFor, maps.List, maps.Watch, shard.ByName))
	plain := factory.Core().V1().ConfigMaps().Informer()
	err = shard.Informer[*corev1.ConfigMap](m, factory.InformerFor, maps.List, maps.Watch, shard.ByName)
	require.ErrorContains(t, err, "already has an informer")
	assert.Same(t, plain.GetStore(), factory.Core().V1().ConfigMaps().Informer().GetStore(), "the factory keeps its informer")

	err = shard.Informer[*corev1.ConfigMap](m, factory.InformerFor, maps.List, maps.Watch, nil)
	require.ErrorContains(t, err, "a route")
	err = shard.Informer[runtime.Object](m, factory.InformerFor, maps.List, maps.Watch, shard.ByName)
	require.ErrorContains(t, err, "pointer to a struct")
}

// TestRoutes checks where ByName, ByController and
// ByClusterScopedController send objects.
func TestRoutes(t *testing.T) {
	owner := func(apiVersion, kind string, controller bool) metav1.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "s",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "owner", UID: "u", Controller: &controller}}}}
	}
	fooKind := schema.GroupKind{Group: "samplecontroller.k8s.io", Kind: "Foo"}
	tests := []struct {
		name  string
		route shard.Route
		obj   metav1.Object
		key   string
		ok    bool
	}{
		{"by name, namespaced", shard.ByName, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "s"}}, "app/s", true},
		{"by name, cluster-scoped", shard.ByName, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, "n", true},
		{"controller of the kind", shard.ByController(fooKind), owner("samplecontroller.k8s.io/v1alpha1", "Foo", true), "app/owner", true},
		{"cluster-scoped controller", shard.ByClusterScopedController(fooKind), owner("samplecontroller.k8s.io/v1", "Foo", true), "owner", true},
		{"owner that is not the controller", shard.ByController(fooKind), owner("samplecontroller.k8s.io/v1alpha1", "Foo", false), "", false},
		{"controller of another group", shard.ByController(fooKind), owner("other.io/v1", "Foo", true), "", false},
		{"controller of another kind", shard.ByController(fooKind), owner("samplecontroller.k8s.io/v1alpha1", "Bar", true), "", false},
		{"no owner", shard.ByController(fooKind), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "s"}}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, ok := tt.route(tt.obj)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.key, key)
		})
	}
}

// TestInformerKeepsObjectsOfClaimedKeys: when a key moves to another
// replica while a reconcile holds it, the key's objects stay in the
// caches of the replica it leaves until the reconcile has returned, so
// that the reconcile does not see them vanish (as if deleted); then they
// go.
func TestInformerKeepsObjectsOfClaimedKeys(t *testing.T) {
	t.Parallel()
	const keys = 8
	client := fake.NewClientset()
	parent := map[string]int{}
	ctx := context.Background()
	for i := range keys {
		_, err := client.CoreV1().ConfigMaps(appNS).Create(ctx, configMap(i), metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = client.CoreV1().Secrets(appNS).Create(ctx, childSecret(fmt.Sprintf("s-%d", i), configMap(i)), metav1.CreateOptions{})
		require.NoError(t, err)
		parent[fmt.Sprintf("s-%d", i)] = i
	}
	a := startCached(t, client, "a")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		maps, secrets := expectedCaches(a, keys, parent)
		assert.Len(c, maps, keys, "a alone owns every key")
		assert.Equal(c, maps, storeKeys(a.maps))
		assert.Equal(c, secrets, storeKeys(a.secrets))
	}, waitFor, poll)

	bName := shard.LeaseName(group, "b")
	moving := -1
	for i := range keys {
		if shard.Assign([]string{a.m.Name(), bName}, fmt.Sprintf("%s/cm-%d", appNS, i)) == bName {
			moving = i
			break
		}
	}
	require.GreaterOrEqual(t, moving, 0, "a key moves to b")
	claimCtx, release, ok := a.gate.Claim(ctx, cache.ObjectName{Namespace: appNS, Name: fmt.Sprintf("cm-%d", moving)})
	require.True(t, ok)
	b := startCached(t, client, "b")
	select {
	case <-claimCtx.Done(): // a stopped owning the key and revoked the claim
	case <-time.After(waitFor):
		t.Fatal("the claim of a key that moved was not revoked")
	}
	assert.Contains(t, storeKeys(a.maps), fmt.Sprintf("%s/cm-%d", appNS, moving), "the ConfigMap of a claimed key left the cache")
	assert.Contains(t, storeKeys(a.secrets), fmt.Sprintf("%s/s-%d", appNS, moving), "the Secret of a claimed key left the cache")

	release()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, r := range []*cachedReplica{a, b} {
			maps, secrets := expectedCaches(r, keys, parent)
			assert.Equal(c, maps, storeKeys(r.maps), "%s's ConfigMaps", r.id)
			assert.Equal(c, secrets, storeKeys(r.secrets), "%s's Secrets", r.id)
		}
		assert.True(c, b.gate.Owns(cache.ObjectName{Namespace: appNS, Name: fmt.Sprintf("cm-%d", moving)}), "b owns the key")
	}, waitFor, poll)
}
