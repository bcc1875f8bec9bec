package shard

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// recordingEnqueuer records the keys a Gate adds; the first add blocks
// until unblock is closed, so that a test can change ownership between
// two scans.
type recordingEnqueuer struct {
	mu      sync.Mutex
	added   []string
	first   chan struct{}
	unblock chan struct{}
	once    sync.Once
}

func (e *recordingEnqueuer) Add(key string)                       { e.AddLowPriority(key) }
func (e *recordingEnqueuer) AddAfter(key string, _ time.Duration) { e.AddLowPriority(key) }
func (e *recordingEnqueuer) AddLowPriority(key string) {
	e.mu.Lock()
	e.added = append(e.added, key)
	e.mu.Unlock()
	e.once.Do(func() {
		close(e.first)
		<-e.unblock
	})
}

func (e *recordingEnqueuer) count(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, k := range e.added {
		if k == key {
			n++
		}
	}
	return n
}

// TestGateReaddsKeyLostAndRegainedBetweenScans: a key that is lost and
// regained while the Gate is busy must be added again, because whatever
// was queued or running for it while it was lost was dropped.
func TestGateReaddsKeyLostAndRegainedBetweenScans(t *testing.T) {
	m, err := New(Config{Client: fake.NewClientset(), Namespace: "ops", Group: "g", Identity: "a"})
	require.NoError(t, err)
	key := "ns/k"
	g := NewGate(m, Keys[string]{String: func(k string) string { return k }, List: func() []string { return []string{key} }})
	owning := newView(nil, "a", []string{"a"}, []string{"a"}, nil, nil, time.Hour)
	require.True(t, owning.owns(hashKey(key)))
	m.apply(owning)

	e := &recordingEnqueuer{first: make(chan struct{}), unblock: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); g.Start(ctx, e) }()
	defer func() { cancel(); <-done }()

	<-e.first // the first scan is adding the key
	m.apply(nil)
	m.apply(owning)
	close(e.unblock)
	assert.Eventually(t, func() bool { return e.count(key) == 2 }, 10*time.Second, time.Millisecond,
		"the key lost and regained between two scans is added again")
}

// TestRestartWithSameIdentity: a replica restarted under the identity of
// one that was killed finds its Lease still there and takes it over.
func TestRestartWithSameIdentity(t *testing.T) {
	client := fake.NewClientset()
	// Timings that a busy machine's delays cannot make it lose its Lease.
	cfg := Config{Client: client, Namespace: "ops", Group: "g", Identity: "pod-0",
		LeaseDuration: 6 * time.Second, RenewDeadline: 5 * time.Second, RetryPeriod: 200 * time.Millisecond}
	_, err := client.CoordinationV1().Leases("ops").Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeaseName("g", "pod-0"), Namespace: "ops", Labels: map[string]string{LabelGroup: "g"},
			Annotations: map[string]string{AnnotationView: "7 " + LeaseName("g", "pod-0")}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod-0"), RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	m, err := New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			done <- err
			return true
		default:
			return m.HasSynced()
		}
	}, time.Minute, 10*time.Millisecond)
	require.True(t, m.HasSynced(), "the restarted replica owns its keys")
	cancel()
	require.NoError(t, <-done)
}

// TestGroupMustMakeLeaseNames: a group is part of every Lease name, so it
// must be a DNS subdomain prefix, not only a label value.
func TestGroupMustMakeLeaseNames(t *testing.T) {
	for _, group := range []string{"Foo", "foo_controller", "-foo", "foo."} {
		t.Run(group, func(t *testing.T) {
			_, err := New(Config{Client: fake.NewClientset(), Namespace: "ops", Group: group})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "group")
		})
	}
}

// TestListInFlightBindsClaims replays the churn in which a replica's own
// publication is still on its way: X works under [X], publishes [X,Y]
// when Y joins, and Y leaves before that write lands. X must not claim
// the keys [X,Y] gives Y while that write may still land, because a
// replica joining next may read only that list.
func TestListInFlightBindsClaims(t *testing.T) {
	cfg, err := Config{Client: fake.NewClientset(), Namespace: "ops", Group: "g", Identity: "x"}.complete()
	require.NoError(t, err)
	x := newCore(cfg, "x-1")
	x.joinHold = time.Nanosecond // long past: this test is about the lists
	y := LeaseName("g", "y")
	key := keyOwnedBy([]string{x.name}, x.name, []string{x.name, y}, y)
	require.NotEmpty(t, key)
	wall := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rv := 0
	// store plays the API server: it stores a write and returns it as the
	// informer delivers it.
	store := func(l *coordinationv1.Lease) *coordinationv1.Lease {
		rv++
		l = l.DeepCopy()
		l.ResourceVersion = strconv.Itoa(rv)
		return l
	}
	now := time.Duration(0)
	step := func() stepResult {
		now += time.Millisecond
		res := x.step(now)
		require.NoError(t, res.lost)
		if res.applyView && res.gen > 0 {
			x.released(res.gen) // no claim to wait for
		}
		return res
	}
	echo := func(l *coordinationv1.Lease) {
		require.NoError(t, x.observe(l, now))
	}
	created := store(x.initialLease(now, wall))
	x.created(created)
	echo(created)
	step()
	require.True(t, step().publish, "X publishes [X]")
	echo(store(x.nextWrite(now, wall)))
	v := step().view
	require.True(t, v.owns(hashKey(key)), "X owns the key under [X]")

	yLease := store(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: y, Annotations: map[string]string{AnnotationView: "0 "}}})
	echo(yLease)
	step()
	require.True(t, step().publish, "X publishes [X,Y]")
	slow := x.nextWrite(now, wall) // on its way, not yet landed
	require.Equal(t, "2 "+strings.Join([]string{x.name, y}, ","), slow.Annotations[AnnotationView])

	left := yLease.DeepCopy()
	left.Annotations[AnnotationView] = "1 " + leftMark
	echo(store(left))
	step()
	res := step()
	assert.Equal(t, []string{x.name}, x.members, "Y left")
	assert.False(t, res.view.owns(hashKey(key)), "X must not claim a key that its list on the way gives Y")

	echo(store(slow)) // the slow write lands
	step()
	echo(store(x.nextWrite(now, wall))) // publishes [X] again
	assert.True(t, step().view.owns(hashKey(key)), "X owns the key again once [X] is its only list")
}

// TestRenewalErrorKeepsTheLease: a renewal that fails (typed clients
// answer an empty Lease with the error) must not become the version the
// next renewal is built on: the replica renews on and keeps its keys.
func TestRenewalErrorKeepsTheLease(t *testing.T) {
	client := fake.NewClientset()
	reconciletest.Strict(client) // resourceVersions, as an API server gives them
	var mu sync.Mutex
	updates, failed, afterFailure := 0, false, 0
	var names []string
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		updates++
		if failed {
			afterFailure++
			names = append(names, a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).Name)
		}
		if updates == 3 {
			failed = true
			return true, nil, apierrors.NewInternalError(errors.New("etcdserver: leader changed"))
		}
		return false, nil, nil
	})
	m, err := New(Config{Client: client, Namespace: "ops", Group: "g", Identity: "pod-0",
		LeaseDuration: 6 * time.Second, RenewDeadline: 5 * time.Second, RetryPeriod: 100 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	// Ten renewals after the failure and the join hold: the replica
	// would have lost its Lease by then.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return afterFailure >= 10 && m.HasSynced()
	}, time.Minute, 10*time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Run returned after a failed renewal: %v", err)
	default:
	}
	mu.Lock()
	for _, n := range names {
		assert.Equal(t, LeaseName("g", "pod-0"), n, "every renewal writes the replica's Lease")
	}
	mu.Unlock()
	cancel()
	require.NoError(t, <-done)
}
