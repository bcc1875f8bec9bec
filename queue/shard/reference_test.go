package shard_test

import (
	"context"
	"fmt"
	"slices"
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
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue/shard"
)

// secretRef is the annotation by which a ConfigMap refers to a Secret of
// its namespace, and the name of the index of those references.
const secretRef = "example.com/secret"

func secretRefs(obj any) ([]string, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || cm.Annotations[secretRef] == "" {
		return nil, nil
	}
	return []string{cm.Namespace + "/" + cm.Annotations[secretRef]}, nil
}

// referringReplica is a replica whose ConfigMap (key) informer is sharded
// and whose Secret informer holds what its ConfigMaps refer to.
type referringReplica struct {
	id      string
	m       *shard.Membership
	gate    *shard.Gate[cache.ObjectName]
	maps    cache.Store
	secrets cache.Store
	stop    func()
}

func startReferring(t *testing.T, client *fake.Clientset, id string) *referringReplica {
	t.Helper()
	m, err := shard.New(fastConfig(client, id))
	require.NoError(t, err)
	factory := informers.NewSharedInformerFactory(client, 0)
	maps, secrets := client.CoreV1().ConfigMaps(""), client.CoreV1().Secrets("")
	require.NoError(t, shard.Informer[*corev1.ConfigMap](m, factory.InformerFor, maps.List, maps.Watch, shard.ByName))
	primaries := factory.Core().V1().ConfigMaps().Informer()
	require.NoError(t, primaries.AddIndexers(cache.Indexers{secretRef: secretRefs}))
	require.NoError(t, shard.Referenced[*corev1.Secret](m, factory.InformerFor, secrets.List, secrets.Watch, primaries, secretRef))
	r := &referringReplica{id: id, m: m,
		gate:    shard.NewGate(m, shard.ObjectNames(factory.Core().V1().ConfigMaps().TypedInformer())),
		maps:    primaries.GetStore(),
		secrets: factory.Core().V1().Secrets().Informer().GetStore()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	factory.Start(ctx.Done())
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			<-done
			factory.Shutdown()
		})
	}
	t.Cleanup(r.stop)
	return r
}

// referringMap returns ConfigMap i referring to Secret secret ("" for
// none).
func referringMap(i int, secret string) *corev1.ConfigMap {
	cm := configMap(i)
	if secret != "" {
		cm.Annotations = map[string]string{secretRef: secret}
	}
	return cm
}

// referred returns the Secrets r should hold: those its owned ConfigMaps
// refer to and that exist.
func referred(r *referringReplica, refs map[int]string, exist func(string) bool) []string {
	var out []string
	for i, s := range refs {
		if s != "" && exist(s) && r.gate.Owns(cache.ObjectName{Namespace: appNS, Name: fmt.Sprintf("cm-%d", i)}) {
			out = append(out, appNS+"/"+s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestReferencedCachesWhatOwnedKeysReferTo runs a replica whose Secret
// informer holds the Secrets its ConfigMaps refer to, then a second one,
// and checks that each holds exactly the Secrets its own keys refer to
// (a Secret two keys share in both, one nobody refers to in neither);
// that a changed reference fetches the new Secret with one relist and
// lets the old one go, and that a change that keeps the references
// relists nothing; that a reference to a missing Secret is filled when
// the Secret is created; and that when a replica leaves, the other owns
// each of its keys only once it holds what the key refers to.
func TestReferencedCachesWhatOwnedKeysReferTo(t *testing.T) {
	t.Parallel()
	const keys = 16
	client := fake.NewClientset()
	var lists atomic.Int32
	client.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return false, nil, nil
	})
	ctx := context.Background()
	var mu sync.Mutex
	refs := map[int]string{}
	existing := map[string]bool{}
	exist := func(s string) bool { return existing[s] }
	for i := range keys / 2 {
		_, err := client.CoreV1().Secrets(appNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: fmt.Sprintf("s-%d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
		existing[fmt.Sprintf("s-%d", i)] = true
	}
	for _, name := range []string{"shared", "unreferenced"} {
		_, err := client.CoreV1().Secrets(appNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		existing[name] = true
	}
	for i := range keys {
		refs[i] = fmt.Sprintf("s-%d", i/2) // two keys share each Secret
		if i >= keys-4 {
			refs[i] = "shared"
		}
		_, err := client.CoreV1().ConfigMaps(appNS).Create(ctx, referringMap(i, refs[i]), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	holds := func(rs ...*referringReplica) func(c *assert.CollectT) {
		return func(c *assert.CollectT) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rs {
				assert.Len(c, r.m.Members(), len(rs), r.id)
				assert.Equal(c, referred(r, refs, exist), storeKeys(r.secrets), "%s's Secrets", r.id)
			}
		}
	}

	a := startReferring(t, client, "a")
	require.EventuallyWithT(t, holds(a), waitFor, poll)
	assert.Len(t, storeKeys(a.secrets), keys/2-2+1, "a holds every referenced Secret")
	assert.NotContains(t, storeKeys(a.secrets), appNS+"/unreferenced")
	b := startReferring(t, client, "b")
	require.EventuallyWithT(t, holds(a, b), waitFor, poll)
	shared := slices.DeleteFunc(storeKeys(a.secrets), func(k string) bool { return !slices.Contains(storeKeys(b.secrets), k) })
	assert.NotEmpty(t, shared, "keys of both replicas refer to one Secret")
	for _, r := range []*referringReplica{a, b} {
		assert.NotContains(t, storeKeys(r.secrets), appNS+"/unreferenced", r.id)
	}

	// A key of a's comes to refer to the unreferenced Secret.
	moving := -1
	for i := range keys {
		if a.gate.Owns(cache.ObjectName{Namespace: appNS, Name: fmt.Sprintf("cm-%d", i)}) {
			moving = i
			break
		}
	}
	require.GreaterOrEqual(t, moving, 0)
	setRef := func(i int, secret string, annotate bool) {
		t.Helper()
		cm := referringMap(i, secret)
		if annotate {
			cm.Labels = map[string]string{"touched": fmt.Sprint(time.Now().UnixNano())}
		}
		mu.Lock()
		refs[i] = secret
		mu.Unlock()
		_, err := client.CoreV1().ConfigMaps(appNS).Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	before := lists.Load()
	setRef(moving, "unreferenced", false)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Contains(c, storeKeys(a.secrets), appNS+"/unreferenced")
		holds(a, b)(c)
	}, waitFor, poll)
	assert.Equal(t, int32(1), lists.Load()-before, "one relist fetched the newly referenced Secret")

	// A change that keeps the reference relists nothing.
	before = lists.Load()
	setRef(moving, "unreferenced", true)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		obj, ok, err := a.maps.GetByKey(fmt.Sprintf("%s/cm-%d", appNS, moving))
		assert.NoError(c, err)
		if assert.True(c, ok) {
			assert.NotEmpty(c, obj.(*corev1.ConfigMap).Labels["touched"])
		}
	}, waitFor, poll)
	for _, r := range []*referringReplica{a, b} {
		mu.Lock()
		want := referred(r, refs, exist)
		mu.Unlock()
		assert.Equal(t, want, storeKeys(r.secrets), "%s's Secrets are as they were", r.id)
	}
	assert.Equal(t, int32(0), lists.Load()-before, "a change that keeps the references relists nothing")

	// A reference to a Secret that does not exist yet.
	setRef(moving, "later", false)
	require.EventuallyWithT(t, holds(a, b), waitFor, poll)
	_, err := client.CoreV1().Secrets(appNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "later"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	mu.Lock()
	existing["later"] = true
	mu.Unlock()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Contains(c, storeKeys(a.secrets), appNS+"/later")
		holds(a, b)(c)
	}, waitFor, poll)

	// b leaves: a owns a key of b's only once it holds what it refers to.
	var violations []string
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		deadline := time.Now().Add(waitFor)
		for time.Now().Before(deadline) {
			mu.Lock()
			want := referred(a, refs, exist)
			mu.Unlock()
			held := storeKeys(a.secrets)
			for _, k := range want {
				if !slices.Contains(held, k) {
					violations = append(violations, "owns a referrer of "+k+" without it cached")
				}
			}
			if len(a.m.Members()) == 1 && len(storeKeys(a.maps)) == keys || len(violations) > 0 {
				return
			}
			time.Sleep(time.Millisecond) // sampling, not synchronisation
		}
	}()
	b.stop()
	<-watching
	assert.Empty(t, violations)
	require.EventuallyWithT(t, holds(a), waitFor, poll)
}

// TestReferencedErrors checks the refusals of Referenced.
func TestReferencedErrors(t *testing.T) {
	client := fake.NewClientset()
	m, err := shard.New(fastConfig(client, "a"))
	require.NoError(t, err)
	factory := informers.NewSharedInformerFactory(client, 0)
	secrets := client.CoreV1().Secrets("")
	primaries := factory.Core().V1().ConfigMaps().Informer()

	require.NoError(t, shard.Referenced[*corev1.Secret]((*shard.Membership)(nil), factory.InformerFor, secrets.List, secrets.Watch, nil, ""))
	err = shard.Referenced[*corev1.Secret](m, factory.InformerFor, secrets.List, secrets.Watch, nil, secretRef)
	require.ErrorContains(t, err, "referrers' informer")
	err = shard.Referenced[*corev1.Secret](m, factory.InformerFor, secrets.List, secrets.Watch, primaries, secretRef)
	require.ErrorContains(t, err, "no index")
	require.NoError(t, primaries.AddIndexers(cache.Indexers{secretRef: secretRefs}))
	plain := factory.Core().V1().Secrets().Informer()
	err = shard.Referenced[*corev1.Secret](m, factory.InformerFor, secrets.List, secrets.Watch, primaries, secretRef)
	require.ErrorContains(t, err, "already has an informer")
	assert.Same(t, plain.GetStore(), factory.Core().V1().Secrets().Informer().GetStore(), "the factory keeps its informer")
}

// TestReferencedKeepsObjectsOfClaimedKeys: when a key moves to another
// replica while a reconcile holds it, what the key's object refers to
// stays in the cache of the replica it leaves until the reconcile has
// returned, also when another reference is dropped meanwhile; then it
// goes.
func TestReferencedKeepsObjectsOfClaimedKeys(t *testing.T) {
	t.Parallel()
	const keys = 8
	client := fake.NewClientset()
	ctx := context.Background()
	for i := range keys {
		_, err := client.CoreV1().Secrets(appNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: fmt.Sprintf("s-%d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = client.CoreV1().ConfigMaps(appNS).Create(ctx, referringMap(i, fmt.Sprintf("s-%d", i)), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	a := startReferring(t, client, "a")
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.Len(c, storeKeys(a.secrets), keys) }, waitFor, poll)

	bName := shard.LeaseName(group, "b")
	moving, staying := -1, -1
	for i := range keys {
		if shard.Assign([]string{a.m.Name(), bName}, fmt.Sprintf("%s/cm-%d", appNS, i)) == bName {
			moving = i
		} else {
			staying = i
		}
	}
	require.True(t, moving >= 0 && staying >= 0, "a key moves to b, another stays")
	key := cache.ObjectName{Namespace: appNS, Name: fmt.Sprintf("cm-%d", moving)}
	require.Eventually(t, func() bool { return a.gate.Owns(key) }, waitFor, poll, "a owns every key")
	claimCtx, release, ok := a.gate.Claim(ctx, key)
	require.True(t, ok)
	startReferring(t, client, "b")
	select {
	case <-claimCtx.Done():
	case <-time.After(waitFor):
		t.Fatal("the claim of a key that moved was not revoked")
	}
	// A key that stays drops its reference: the cache lets go of what no
	// kept key refers to, but not of what the claimed key refers to.
	_, err := client.CoreV1().ConfigMaps(appNS).Update(ctx, referringMap(staying, ""), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotContains(c, storeKeys(a.secrets), fmt.Sprintf("%s/s-%d", appNS, staying))
	}, waitFor, poll)
	assert.Contains(t, storeKeys(a.secrets), fmt.Sprintf("%s/s-%d", appNS, moving), "what a claimed key refers to left the cache")

	release()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotContains(c, storeKeys(a.secrets), fmt.Sprintf("%s/s-%d", appNS, moving))
	}, waitFor, poll)
}
