package shard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/queue/internal/lease"
)

// timeoutConfig has timings short enough for a test and long enough that a
// busy machine's delays do not cost the replica its Lease: a write of its
// Lease may take lease.RequestTimeout(4s, 3s, 250ms) = 1s, every other
// request RetryPeriod.
func timeoutConfig(client *hangingClient, identity string) Config {
	return Config{Client: client, Namespace: "ops", Group: "g", Identity: identity,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 250 * time.Millisecond}
}

// expectedTimeouts are the longest a request of each verb may take under
// cfg: the writes of the replica's own Lease lease.RequestTimeout, the
// reads after a conflict or an AlreadyExists and the deletions
// RetryPeriod.
func expectedTimeouts(cfg Config) map[string]time.Duration {
	write := lease.RequestTimeout(cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	return map[string]time.Duration{"create": write, "update": write, "get": cfg.RetryPeriod, "delete": cfg.RetryPeriod}
}

// reqFate is what becomes of a Lease request.
type reqFate int

const (
	reqAnswered  reqFate = iota // the fake clientset answers it
	reqHangs                    // it blocks until its context ends, and fails with the context's error
	reqConflicts                // it is refused with a conflict at once
)

// sentRequest is one Lease request as the API server saw it.
type sentRequest struct {
	verb, name  string
	n           int // the how-manieth request of its verb, from 1
	leave       bool
	sent        time.Time
	deadline    time.Time
	hasDeadline bool
	hung        bool
	ended       time.Time // when a hung request gave up
	failed      bool      // answered with an error
}

func (r sentRequest) String() string {
	what := r.verb
	if r.leave {
		what = "update publishing that the replica left"
	}
	return fmt.Sprintf("%s #%d of %s", what, r.n, r.name)
}

// fateChooser picks the fate of a request.
type fateChooser func(r sentRequest) reqFate

// hangingClient is a fake clientset whose Lease requests (not the informer's
// lists and watches) are recorded and may hang or fail, as choose decides.
// Like a real client, it refuses a request whose context has ended.
type hangingClient struct {
	*fake.Clientset
	mu       sync.Mutex
	requests []sentRequest
	counts   map[string]int
	choose   fateChooser
}

func newHangingClient(t *testing.T, choose fateChooser, objs ...*coordinationv1.Lease) *hangingClient {
	c := &hangingClient{Clientset: fake.NewClientset(), counts: map[string]int{}, choose: choose}
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range c.recorded() {
				t.Logf("%s: sent at %s, deadline %s, hung %v, failed %v", r, r.sent.Format(time.StampMilli), r.deadline.Format(time.StampMilli), r.hung, r.failed)
			}
		}
	})
	for _, o := range objs {
		require.NoError(t, c.Tracker().Add(o))
	}
	return c
}

func (c *hangingClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return hangingCoordination{c.Clientset.CoordinationV1(), c}
}

// setChooser replaces the choice of the requests' fates.
func (c *hangingClient) setChooser(choose fateChooser) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.choose = choose
}

// enter records a request, hangs or refuses it if chosen, and returns its
// index.
func (c *hangingClient) enter(ctx context.Context, verb, name string, l *coordinationv1.Lease) (int, error) {
	c.mu.Lock()
	c.counts[verb]++
	r := sentRequest{verb: verb, name: name, n: c.counts[verb], sent: time.Now()}
	r.leave = l != nil && strings.HasSuffix(l.Annotations[AnnotationView], " "+leftMark)
	r.deadline, r.hasDeadline = ctx.Deadline()
	f := reqAnswered
	if c.choose != nil {
		f = c.choose(r)
	}
	r.hung = f == reqHangs
	r.failed = f == reqConflicts
	i := len(c.requests)
	c.requests = append(c.requests, r)
	c.mu.Unlock()
	if f == reqConflicts {
		return i, apierrors.NewConflict(leaseResource, name, errors.New("the object has been modified"))
	}
	if r.hung {
		<-ctx.Done()
		c.mu.Lock()
		c.requests[i].ended = time.Now()
		c.mu.Unlock()
	}
	if err := ctx.Err(); err != nil {
		c.answered(i, err)
		return i, err
	}
	return i, nil
}

// answered records that the i-th request was answered with err.
func (c *hangingClient) answered(i int, err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests[i].failed = true
}

// recorded returns the requests so far.
func (c *hangingClient) recorded() []sentRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sentRequest(nil), c.requests...)
}

// count counts the requests that match.
func (c *hangingClient) count(match func(r sentRequest) bool) int {
	n := 0
	for _, r := range c.recorded() {
		if match(r) {
			n++
		}
	}
	return n
}

// hungEnded returns when the last hung request gave up, and whether any
// request hung and every one that did has given up.
func (c *hangingClient) hungEnded() (last time.Time, all bool) {
	hung := 0
	all = true
	for _, r := range c.recorded() {
		if r.hung {
			hung++
			if r.ended.IsZero() {
				all = false
			}
			if r.ended.After(last) {
				last = r.ended
			}
		}
	}
	return last, all && hung > 0
}

// renewedAfter counts the successful updates sent after t.
func (c *hangingClient) renewedAfter(t time.Time) int {
	return c.count(func(r sentRequest) bool { return r.verb == "update" && r.sent.After(t) && !r.failed })
}

type hangingCoordination struct {
	coordinationv1client.CoordinationV1Interface
	c *hangingClient
}

func (c hangingCoordination) Leases(namespace string) coordinationv1client.LeaseInterface {
	return hangingLeases{c.CoordinationV1Interface.Leases(namespace), c.c}
}

type hangingLeases struct {
	coordinationv1client.LeaseInterface
	c *hangingClient
}

func (l hangingLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	i, err := l.c.enter(ctx, "get", name, nil)
	if err != nil {
		return nil, err
	}
	got, err := l.LeaseInterface.Get(ctx, name, opts)
	l.c.answered(i, err)
	return got, err
}

func (l hangingLeases) Create(ctx context.Context, o *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	i, err := l.c.enter(ctx, "create", o.Name, o)
	if err != nil {
		return nil, err
	}
	got, err := l.LeaseInterface.Create(ctx, o, opts)
	l.c.answered(i, err)
	return got, err
}

func (l hangingLeases) Update(ctx context.Context, o *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	i, err := l.c.enter(ctx, "update", o.Name, o)
	if err != nil {
		return nil, err
	}
	got, err := l.LeaseInterface.Update(ctx, o, opts)
	l.c.answered(i, err)
	return got, err
}

func (l hangingLeases) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	i, err := l.c.enter(ctx, "delete", name, nil)
	if err != nil {
		return err
	}
	err = l.LeaseInterface.Delete(ctx, name, opts)
	l.c.answered(i, err)
	return err
}

// formerLease is the Lease of identity in group "g", renewed at renewed,
// publishing the member list of its own name.
func formerLease(identity string, renewed time.Time) *coordinationv1.Lease {
	name := LeaseName("g", identity)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ops", Labels: map[string]string{LabelGroup: "g"},
			Annotations: map[string]string{AnnotationView: "7 " + name}, UID: types.UID("uid-" + identity), ResourceVersion: "1"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(identity), RenewTime: &metav1.MicroTime{Time: renewed}},
	}
}

// timedMember is a running Membership of identity "pod-0" with a Gate of
// gateKey.
type timedMember struct {
	m      *Membership
	g      *Gate[string]
	cancel context.CancelFunc
	done   chan error
	stop   func() error // cancels Run and returns what it returned
}

// runTimedMember runs a timedMember on client.
func runTimedMember(t *testing.T, client *hangingClient) *timedMember {
	m, err := New(timeoutConfig(client, "pod-0"))
	require.NoError(t, err)
	g := NewGate(m, Keys[string]{String: func(k string) string { return k }, List: func() []string { return []string{gateKey} }})
	ctx, cancel := context.WithCancel(context.Background())
	r := &timedMember{m: m, g: g, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- m.Run(ctx) }()
	r.stop = sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-r.done:
			return err
		case <-time.After(time.Minute):
			return errors.New("Run did not return")
		}
	})
	t.Cleanup(func() { _ = r.stop() })
	return r
}

// keepsClaim waits until ok holds, failing if Run returns or the claim is
// cancelled first.
func keepsClaim(t *testing.T, done chan error, claimCtx context.Context, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		select {
		case err := <-done:
			done <- err // for the cleanup's stop
			t.Fatalf("%s: Run returned: %v", what, err)
		case <-claimCtx.Done():
			t.Fatalf("%s: the claim was cancelled: %v", what, context.Cause(claimCtx))
		case <-time.After(10 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "timed out: %s", what)
	}
}

// TestHangingRequestKeepsTheKeys: a request of the replica's own Lease that
// hangs until its context ends is abandoned in time for the replica to
// join, writing its Lease within the renew deadline of the hung request
// (a create, or a restarted process's read of the Lease its former one
// left), or to renew within the renew deadline and keep its claims.
func TestHangingRequestKeepsTheKeys(t *testing.T) {
	self := LeaseName("g", "pod-0")
	for _, tc := range []struct {
		name string
		// before chooses fates while joining, after once a claim is held.
		before, after func() fateChooser
		objs          []*coordinationv1.Lease
	}{
		{name: "create", before: func() fateChooser {
			return func(r sentRequest) reqFate { return fateIf(r.verb == "create" && r.n == 1, reqHangs) }
		}},
		{name: "read of the Lease a former process left", objs: []*coordinationv1.Lease{formerLease("pod-0", time.Now())},
			before: func() fateChooser {
				return func(r sentRequest) reqFate { return fateIf(r.verb == "get" && r.n == 1, reqHangs) }
			}},
		{name: "renewal", after: func() fateChooser {
			first := true
			return func(r sentRequest) reqFate {
				if r.verb == "update" && first {
					first = false
					return reqHangs
				}
				return reqAnswered
			}
		}},
		{name: "read after a renewal's conflict", after: func() fateChooser {
			refused, read := false, false
			return func(r sentRequest) reqFate {
				switch {
				case r.verb == "update" && !refused:
					refused = true
					return reqConflicts
				case r.verb == "get" && refused && !read:
					read = true
					return reqHangs
				}
				return reqAnswered
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := newHangingClient(t, nil, tc.objs...)
			if tc.before != nil {
				client.setChooser(tc.before())
			}
			r := runTimedMember(t, client)
			keepsClaim(t, r.done, context.Background(), r.m.HasSynced, "joining")
			if tc.before != nil {
				assertJoinedWithinRenewDeadline(t, client)
			}
			claimCtx, release, ok := r.g.Claim(context.Background(), gateKey)
			require.True(t, ok, "the only member owns every key")
			release = sync.OnceFunc(release)
			defer release()
			if tc.after != nil {
				client.setChooser(tc.after())
			}
			keepsClaim(t, r.done, claimCtx, func() bool {
				ended, all := client.hungEnded()
				return all && client.renewedAfter(ended) >= 3
			}, "renewals after the hung request")
			assert.NoError(t, claimCtx.Err(), "the claim is held")
			assert.Equal(t, []string{self}, r.m.Members())
			release()
			require.NoError(t, r.stop())
		})
	}
}

// assertJoinedWithinRenewDeadline asserts that the replica wrote its Lease
// (a create, or the first renewal of a Lease it took over) within
// RenewDeadline of sending the request that hung: it abandoned that
// request in time to try again.
func assertJoinedWithinRenewDeadline(t *testing.T, client *hangingClient) {
	t.Helper()
	var hung, joined *sentRequest
	sent := client.recorded()
	for i := range sent {
		r := &sent[i]
		switch {
		case r.hung && hung == nil:
			hung = r
		case hung != nil && joined == nil && (r.verb == "create" || r.verb == "update") && !r.failed:
			joined = r
		}
	}
	require.NotNil(t, hung, "a request hung")
	require.NotNil(t, joined, "the replica wrote its Lease after %s hung", hung)
	deadline := timeoutConfig(client, "pod-0").RenewDeadline
	assert.LessOrEqual(t, joined.sent.Sub(hung.sent), deadline,
		"%s hung at %s and the replica wrote its Lease (%s) only at %s, more than RenewDeadline (%s) later",
		hung, hung.sent.Format(time.StampMilli), joined, joined.sent.Format(time.StampMilli), deadline)
}

// TestLeaseRequestTimeouts: every request a replica sends carries a
// deadline: the creation and the updates of its own Lease
// lease.RequestTimeout after they were sent, the reads after an
// AlreadyExists or a conflict, the deletion of its own Lease and of a
// departed member's RetryPeriod. One run sends every kind: it takes over
// the Lease a former process of its identity left, renews it (once with a
// conflict), deletes the Lease of a member gone for two lease durations,
// and on stop publishes that it left (once with a conflict) and deletes
// its Lease.
func TestLeaseRequestTimeouts(t *testing.T) {
	t.Parallel()
	self, gone := LeaseName("g", "pod-0"), LeaseName("g", "gone")
	var renewals, leaves int
	client := newHangingClient(t, func(r sentRequest) reqFate {
		switch {
		case r.verb == "update" && r.leave:
			leaves++
			return fateIf(leaves == 1, reqConflicts)
		case r.verb == "update":
			renewals++
			return fateIf(renewals == 3, reqConflicts)
		}
		return reqAnswered
	}, formerLease("pod-0", time.Now()), formerLease("gone", time.Now().Add(-time.Hour)))
	r := runTimedMember(t, client)
	keepsClaim(t, r.done, context.Background(), func() bool {
		return client.count(func(r sentRequest) bool { return r.verb == "delete" && r.name == gone && !r.failed }) > 0 &&
			client.count(func(r sentRequest) bool { return r.verb == "get" && r.n == 2 }) > 0
	}, "the departed member's Lease deleted, a renewal's conflict read")
	require.Equal(t, []string{self}, r.m.Members())
	require.NoError(t, r.stop())

	timeouts := expectedTimeouts(timeoutConfig(client, "pod-0"))
	sent := map[string]int{}
	for _, r := range client.recorded() {
		what := r.verb
		if r.leave {
			what = "leave"
		}
		sent[what+" "+r.name]++
		if assert.True(t, r.hasDeadline, "%s has no deadline", r) {
			assert.False(t, r.deadline.After(r.sent.Add(timeouts[r.verb])),
				"%s may take %s, longer than %s", r, r.deadline.Sub(r.sent).Round(time.Millisecond), timeouts[r.verb])
		}
	}
	assert.Equal(t, 1, sent["create "+self], "joins")
	assert.Equal(t, 3, sent["get "+self], "reads the Lease it takes over, after a renewal's conflict and after a leave's conflict")
	assert.Equal(t, 2, sent["leave "+self], "publishes that it left, again after a conflict")
	assert.Equal(t, 1, sent["delete "+self], "deletes its Lease")
	assert.Equal(t, 1, sent["delete "+gone], "deletes the departed member's Lease")
	assert.GreaterOrEqual(t, sent["update "+self], 3, "renews")
}

// when returns f if cond holds, reqAnswered otherwise.
func fateIf(cond bool, f reqFate) reqFate {
	if cond {
		return f
	}
	return reqAnswered
}
