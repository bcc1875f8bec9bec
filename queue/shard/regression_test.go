package shard

import (
	"context"
	"errors"
	"slices"
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

	"github.com/ctrlkit/ctrlkit/queue/leader"
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

// gateKey is the one key of the Gates of gateOwning.
const gateKey = "ns/k"

// gateOwning returns a replica's membership, a Gate of gateKey over it,
// and a view that owns gateKey.
func gateOwning(t *testing.T) (*Membership, *Gate[string], *view) {
	key := gateKey
	m, err := New(Config{Client: fake.NewClientset(), Namespace: "ops", Group: "g", Identity: "a"})
	require.NoError(t, err)
	g := NewGate(m, Keys[string]{String: func(k string) string { return k }, List: func() []string { return []string{key} }})
	owning := newView(nil, "a", []string{"a"}, []string{"a"}, nil, nil, time.Hour)
	require.True(t, owning.owns(hashKey(key)))
	return m, g, owning
}

// TestGateReaddsKeyLostAndRegainedBetweenScans: a key that is lost and
// regained while the Gate is busy must be added again, because whatever
// was queued or running for it while it was lost was dropped.
func TestGateReaddsKeyLostAndRegainedBetweenScans(t *testing.T) {
	m, g, owning := gateOwning(t)
	key := gateKey
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
	t.Parallel()
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
	t.Parallel()
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

// TestFullGroupRefusesToJoin: a replica that finds MaxMembers live
// members leaves before claiming anything, deletes its Lease, and Run
// says why; the members stay.
func TestFullGroupRefusesToJoin(t *testing.T) {
	client := fake.NewClientset()
	leases := client.CoordinationV1().Leases("ops")
	for i := range MaxMembers {
		name := LeaseName("g", "pod-"+strconv.Itoa(i))
		_, err := leases.Create(context.Background(), &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ops", Labels: map[string]string{LabelGroup: "g"},
				Annotations: map[string]string{AnnotationView: "1 " + name}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod-" + strconv.Itoa(i)), RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	m, err := New(Config{Client: client, Namespace: "ops", Group: "g", Identity: "late",
		LeaseDuration: 6 * time.Second, RenewDeadline: 5 * time.Second, RetryPeriod: 200 * time.Millisecond})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background()) }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrGroupFull)
		assert.Contains(t, err.Error(), strconv.Itoa(MaxMembers+1)+" live members")
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
	}
	assert.False(t, m.HasSynced())
	list, err := leases.List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, MaxMembers, "the refused replica's Lease is deleted, the members' stay")
	for _, l := range list.Items {
		assert.NotEqual(t, m.Name(), l.Name)
	}
}

// TestGateRescansAfterLongHistory: a Gate that applied more views between
// two scans than it remembers must still add a key lost and regained
// among them.
func TestGateRescansAfterLongHistory(t *testing.T) {
	m, g, owning := gateOwning(t)
	key := gateKey
	m.apply(owning)
	e := &recordingEnqueuer{first: make(chan struct{}), unblock: make(chan struct{})}
	close(e.unblock)
	last := g.scan(e, "c", nil)
	require.Equal(t, 1, e.count(key))

	m.apply(nil) // the key is lost; whatever ran or waited for it was dropped
	for range maxApplied {
		m.apply(owning)
	}
	g.scan(e, "c", last)
	assert.Equal(t, 2, e.count(key), "the key lost and regained is added again")
}

// TestLostLeaseRevokesClaims: a replica whose Lease is deleted cancels
// its claims and waits until they are released before Run returns.
func TestLostLeaseRevokesClaims(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	m, err := New(Config{Client: client, Namespace: "ops", Group: "g", Identity: "a",
		LeaseDuration: 6 * time.Second, RenewDeadline: 5 * time.Second, RetryPeriod: 200 * time.Millisecond})
	require.NoError(t, err)
	g := NewGate(m, Keys[string]{String: func(k string) string { return k }, List: func() []string { return []string{gateKey} }})
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background()) }()
	require.Eventually(t, m.HasSynced, time.Minute, 10*time.Millisecond)
	claimCtx, release, ok := g.Claim(context.Background(), gateKey)
	require.True(t, ok, "the only member owns every key")

	require.NoError(t, client.CoordinationV1().Leases("ops").Delete(context.Background(), m.Name(), metav1.DeleteOptions{}))
	select {
	case <-claimCtx.Done():
	case err := <-done:
		t.Fatalf("Run returned %v without revoking the claim", err)
	case <-time.After(time.Minute):
		t.Fatal("the claim was not revoked")
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while the claim was held", err)
	default:
	}
	release()
	select {
	case err := <-done:
		require.ErrorIs(t, err, leader.ErrLeaseLost)
	case <-time.After(time.Minute):
		t.Fatal("Run did not return once the claim was released")
	}
}

// TestMemberStaysInGroupGrownPastLimit: only a replica that has not
// claimed anything yet refuses a group past MaxMembers; the members that
// joined before stay.
func TestMemberStaysInGroupGrownPastLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		joined  bool
		refused bool
	}{
		{"joining", false, true},
		{"joined", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Config{Client: fake.NewClientset(), Namespace: "ops", Group: "g", Identity: "x"}.complete()
			require.NoError(t, err)
			x := newCore(cfg, "x-1")
			if tc.joined {
				x.joinHold = time.Nanosecond // long past
			}
			wall := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			now := time.Millisecond
			own := x.initialLease(now, wall)
			own.ResourceVersion = "1"
			x.created(own)
			require.NoError(t, x.observe(own, now))
			for i := range MaxMembers {
				name := LeaseName("g", "m-"+strconv.Itoa(i))
				require.NoError(t, x.observe(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: strconv.Itoa(i + 2),
					Annotations: map[string]string{AnnotationView: "1 " + name}}}, now))
			}
			res := x.step(now)
			require.NoError(t, res.lost)
			if tc.refused {
				assert.ErrorIs(t, res.refused, ErrGroupFull)
			} else {
				assert.NoError(t, res.refused)
				assert.Len(t, x.members, MaxMembers+1)
			}
		})
	}
}

// TestPeerGoneOnlyAfterLeaseDuration: a member whose Lease has not
// changed counts as gone only once LeaseDuration has passed between
// seeing its last change and sending this replica's latest write that
// came back; neither RenewDeadline nor a watch that fell behind shortens
// that.
func TestPeerGoneOnlyAfterLeaseDuration(t *testing.T) {
	cfg, err := Config{Client: fake.NewClientset(), Namespace: "ops", Group: "g", Identity: "x"}.complete()
	require.NoError(t, err)
	lease, renew := cfg.LeaseDuration, cfg.RenewDeadline
	for _, tc := range []struct {
		name      string
		echo, now time.Duration // the send time of the latest own write that came back, and now
		gone      bool
	}{
		{"past RenewDeadline", (renew + lease) / 2, (renew + lease) / 2, false},
		{"own writes come back late", lease - 100*time.Millisecond, lease + 100*time.Millisecond, false},
		{"past LeaseDuration", lease + 100*time.Millisecond, lease + 100*time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newCore(cfg, "x-1")
			x.joinHold = time.Nanosecond
			wall := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			rv := 0
			land := func(l *coordinationv1.Lease, at time.Duration) {
				rv++
				l.ResourceVersion = strconv.Itoa(rv)
				require.NoError(t, x.observe(l, at))
			}
			own := x.initialLease(0, wall)
			x.created(own)
			land(own, 0)
			peer := LeaseName("g", "y")
			land(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: peer, Annotations: map[string]string{AnnotationView: "1 " + peer}}}, 0)
			land(x.nextWrite(tc.echo, wall), tc.echo)
			res := x.step(tc.now)
			require.NoError(t, res.lost)
			assert.Equal(t, !tc.gone, slices.Contains(x.members, peer), "the peer is live")
		})
	}
}

// TestClaimsValidForRenewDeadlineFromSend: a replica's claims stay valid
// until RenewDeadline after it sent its latest write that came back, not
// after that write came back, and not for LeaseDuration.
func TestClaimsValidForRenewDeadlineFromSend(t *testing.T) {
	cfg, err := Config{Client: fake.NewClientset(), Namespace: "ops", Group: "g", Identity: "x"}.complete()
	require.NoError(t, err)
	renew := cfg.RenewDeadline
	for _, tc := range []struct {
		name    string
		arrival time.Duration // when the write sent at 0 came back
	}{
		{"prompt echo", time.Millisecond},
		{"late echo", renew - time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newCore(cfg, "x-1")
			own := x.initialLease(0, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			own.ResourceVersion = "1"
			x.created(own)
			require.NoError(t, x.observe(own, tc.arrival))
			assert.NoError(t, x.step(renew-time.Millisecond).lost)
			assert.ErrorIs(t, x.step(renew+time.Millisecond).lost, leader.ErrLeaseLost)
		})
	}
}

// TestTakeoverHoldsForRenewDeadline: a process that took its Lease over
// claims nothing, and does not publish that it left, until RenewDeadline
// after its first write came back, by when the former process, which saw
// that write replace its own, has stopped.
func TestTakeoverHoldsForRenewDeadline(t *testing.T) {
	cfg, err := Config{Client: fake.NewClientset(), Namespace: "ops", Group: "g", Identity: "x"}.complete()
	require.NoError(t, err)
	x := newCore(cfg, "x-2")
	wall := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	former := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: x.name, ResourceVersion: "1",
		Annotations: map[string]string{AnnotationView: "4 " + x.name, annotationWriter: "x-1/9"}}}
	x.tookOverLease(former, 0)
	first := x.nextWrite(0, wall)
	first.ResourceVersion = "2"
	arrival := time.Second
	require.NoError(t, x.observe(first, arrival))
	assert.Equal(t, arrival+cfg.RenewDeadline, x.hold)
}
