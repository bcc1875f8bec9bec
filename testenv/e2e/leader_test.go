package e2e

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
)

// Leader election timings of the leader election tests: a candidate takes
// over 12s after it last saw the Lease renewed; the leader renews every 2s
// and gives up if it cannot renew for 8s. Shorter than client-go's
// defaults (15s, 10s, 2s) so that the tests are quick, and long enough
// that a leader keeps its Lease on a machine so loaded that a renewal takes
// seconds.
const (
	leLeaseDuration = 12 * time.Second
	leRenewDeadline = 8 * time.Second
	leRetryPeriod   = 2 * time.Second
	leShutdown      = 10 * time.Second
)

// TestLeaderElection runs examples/foo replicas with --leader-elect, each
// as its own static-token user so the audit log tells them apart, and shows:
// only the leader writes; after kill -9 of the leader another replica takes
// over within twice the lease duration and converges new Foos; after
// SIGTERM the leader stops its controller, then releases the Lease, and the
// next replica takes over well within one lease duration.
func TestLeaderElection(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	users := []string{"foo-replica-0", "foo-replica-1", "foo-replica-2"}
	r := newRelRig(t, relOptions(users...))
	ctx := t.Context()
	r.grantControllerRoles(users...)
	ns := r.createNamespace("leader")
	leases := relWatchLease(t, r.kube, relLeaseNamespace, relLeaseName)

	args := []string{
		"--leader-elect",
		"--leader-elect-namespace=" + relLeaseNamespace,
		"--leader-elect-lease-duration=" + leLeaseDuration.String(),
		"--leader-elect-renew-deadline=" + leRenewDeadline.String(),
		"--leader-elect-retry-period=" + leRetryPeriod.String(),
		"--resync=30s",
		"--workers=2",
		"--shutdown-timeout=" + leShutdown.String(),
	}
	replicas := make([]*process, len(users))
	start := func(i int) {
		replicas[i] = r.startFoo(t, users[i], r.userKubeconfig(users[i]), args...)
	}
	start(0)
	start(1)
	for _, p := range replicas[:2] {
		relWaitReadyz(t, p)
	}

	// Which replica leads, and the identity it holds the Lease with.
	leaderOf := func(candidates ...int) (int, string) {
		t.Helper()
		var idx int
		var id string
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			idx, id = -1, ""
			for _, i := range candidates {
				if m := leBecameLeader.FindStringSubmatch(replicas[i].out.String()); m != nil {
					require.Equal(c, -1, idx, "two replicas say they lead")
					idx, id = i, m[1]
				}
			}
			require.NotEqual(c, -1, idx, "a replica says it leads")
			lease, err := r.kube.CoordinationV1().Leases(relLeaseNamespace).Get(ctx, relLeaseName, metav1.GetOptions{})
			require.NoError(c, err)
			assert.Equal(c, id, ptr.Deref(lease.Spec.HolderIdentity, ""), "the Lease holder")
		}, waitTimeout, relPoll, "one of replicas %v leads", candidates)
		return idx, id
	}
	first, firstID := leaderOf(0, 1)
	t.Logf("%s leads as %s", users[first], firstID)

	createFoos := func(prefix string, n int) []string {
		t.Helper()
		names := make([]string, n)
		for i := range n {
			names[i] = fmt.Sprintf("%s-%d", prefix, i)
			_, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, relNewFoo(names[i], names[i], int32(i%3)), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		return names
	}
	// convergeAll waits for the Foos and returns when the last converged.
	convergeAll := func(names []string) time.Time {
		t.Helper()
		for _, name := range names {
			r.waitFooConverged(t, ns, name, waitTimeout)
		}
		return time.Now()
	}
	convergeAll(createFoos("before", 5))

	// kill -9 the leader; the other replica takes over once the Lease
	// expires. Foos created right after the kill wait for it.
	second := 1 - first
	killed := time.Now()
	relKillHard(t, replicas[first])
	gone := time.Now() // nothing it sent can reach the API server later
	afterKill := createFoos("after-kill", 5)
	next, secondID := leaderOf(second)
	require.Equal(t, second, next)
	convergedAfterKill := convergeAll(afterKill)

	events := r.auditLog()
	takeover := leFirst(events, audit.ByUser(users[second]), leLeaseWrites(), audit.Succeeded(), audit.Since(killed))
	firstWrite := leFirst(events, audit.ByUser(users[second]), leObjectWrites(), audit.Succeeded(), audit.Since(killed))
	require.NotNil(t, takeover, "%s wrote the Lease after the kill", users[second])
	require.NotNil(t, firstWrite, "%s wrote after the kill", users[second])
	takeoverAfterKill := takeover.Time.Sub(killed)
	firstWriteAfterKill := firstWrite.Time.Sub(killed)
	t.Logf("kill -9 of the leader: %s took the Lease after %s, wrote first after %s (%s), all new Foos converged after %s",
		users[second], takeoverAfterKill.Round(time.Millisecond), firstWriteAfterKill.Round(time.Millisecond), firstWrite,
		convergedAfterKill.Sub(killed).Round(time.Millisecond))
	assert.Less(t, takeoverAfterKill, 2*leLeaseDuration, "takeover after kill -9 within twice the lease duration")
	assert.Less(t, firstWriteAfterKill, 2*leLeaseDuration, "first write of the new leader within twice the lease duration")
	assert.Greater(t, takeoverAfterKill, leLeaseDuration-leRetryPeriod-time.Second/2,
		"a killed leader's Lease is respected until it expires")

	// A third replica joins as a candidate; then SIGTERM to the leader.
	start(2)
	relWaitReadyz(t, replicas[2])
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Contains(c, replicas[2].out.String(), secondID, "the new replica has seen the leader")
	}, waitTimeout, relPoll)
	terminated := time.Now()
	require.NoError(t, replicas[second].cmd.Process.Signal(syscall.SIGTERM))
	afterTerm := createFoos("after-term", 3)
	code, exited := replicas[second].wait(leShutdown + 5*time.Second)
	require.True(t, exited, "the leader exits after SIGTERM")
	assert.Equal(t, 0, code, "exit code")
	third, thirdID := leaderOf(2)
	require.Equal(t, 2, third)
	convergedAfterTerm := convergeAll(afterTerm)

	events = r.auditLog()
	release := leLast(events, audit.ByUser(users[second]), leLeaseWrites(), audit.Succeeded())
	lastObjectWrite := leLast(events, audit.ByUser(users[second]), leObjectWrites())
	takeover = leFirst(events, audit.ByUser(users[2]), leLeaseWrites(), audit.Succeeded(), audit.Since(terminated))
	require.NotNil(t, release)
	require.NotNil(t, lastObjectWrite)
	require.NotNil(t, takeover, "%s wrote the Lease after SIGTERM", users[2])
	takeoverAfterTerm := takeover.Time.Sub(terminated)
	t.Logf("SIGTERM to the leader: its last write %s after, Lease released %s after, %s took over %s after (%s after the release), new Foos converged %s after",
		lastObjectWrite.Time.Sub(terminated).Round(time.Millisecond), release.Time.Sub(terminated).Round(time.Millisecond), users[2],
		takeoverAfterTerm.Round(time.Millisecond), takeover.Time.Sub(release.Time).Round(time.Millisecond),
		convergedAfterTerm.Sub(terminated).Round(time.Millisecond))
	assert.Less(t, takeoverAfterTerm, leLeaseDuration, "takeover after SIGTERM within the lease duration")
	assert.True(t, lastObjectWrite.Time.Before(release.Time), "the controller stops before the Lease is released: last write %s, release %s", lastObjectWrite.Time, release.Time)

	// The Lease as the watch saw it: released (no holder) between the two
	// leaders, and one more transition for each takeover.
	leases.stop()
	history := leases.history()
	released := -1
	for i, rec := range history {
		if rec.at.After(terminated) && rec.holder == "" {
			released = i
			break
		}
	}
	if assert.NotEqual(t, -1, released, "the Lease is seen without a holder after SIGTERM; history:\n%s", leFormatHistory(history)) {
		require.Positive(t, released)
		assert.Equal(t, secondID, history[released-1].holder, "held by the terminated leader until released")
		for _, rec := range history[released+1:] {
			if rec.holder != "" {
				assert.Equal(t, thirdID, rec.holder, "the next holder")
				assert.Equal(t, history[released-1].transitions+1, rec.transitions, "one more transition")
				break
			}
		}
	}
	var holders []string
	for _, rec := range history {
		if len(holders) == 0 || holders[len(holders)-1] != rec.holder {
			holders = append(holders, rec.holder)
		}
	}
	assert.Equal(t, []string{firstID, secondID, "", thirdID}, holders, "holders of the Lease in order")

	// Only the leader writes: every write of a replica's user falls within
	// its leadership, from its first Lease write until its kill or its
	// release; a replica that never led writes nothing.
	ends := map[string]time.Time{users[first]: gone, users[second]: release.Time, users[2]: time.Now().Add(time.Hour)}
	for _, user := range users {
		leaseWrites := audit.Select(events, audit.ByUser(user), leLeaseWrites(), audit.Succeeded())
		writes := audit.Select(events, audit.ByUser(user), leObjectWrites())
		require.NotEmpty(t, leaseWrites, "%s led at some point", user)
		from, to := leaseWrites[0].Time, ends[user]
		var outside []audit.Event
		for _, e := range writes {
			if e.Time.Before(from) || e.Time.After(to) {
				outside = append(outside, e)
			}
		}
		assert.Empty(t, audit.Lines(outside), "writes of %s outside its leadership %s .. %s", user, from.Format(time.StampMilli), to.Format(time.StampMilli))
		t.Logf("%s: led from %s; %d writes: %s", user, from.Format(time.StampMilli), len(writes), audit.FormatTally(audit.Tally(writes)))
	}
	relAssertNoDataRace(t, replicas...)
	t.Logf("done after %s", time.Since(begin).Round(time.Millisecond))
}

var leBecameLeader = regexp.MustCompile(`"Became the leader" .*identity="([^"]+)"`)

// leLeaseWrites selects writes of the leader election Lease.
func leLeaseWrites() audit.Filter {
	writes := audit.Writes()
	return func(e audit.Event) bool {
		return writes(e) && e.APIGroup == "coordination.k8s.io" && e.Resource == "leases" &&
			e.Namespace == relLeaseNamespace && e.Name == relLeaseName
	}
}

// leObjectWrites selects the writes a controller makes for Foos:
// Deployments, Foo status and events.
func leObjectWrites() audit.Filter {
	writes := audit.Writes()
	return func(e audit.Event) bool {
		if !writes(e) {
			return false
		}
		return (e.APIGroup == "apps" && e.Resource == "deployments") ||
			(e.APIGroup == "samplecontroller.k8s.io" && e.Resource == "foos") ||
			(e.APIGroup == "" && e.Resource == "events")
	}
}

func leFirst(events []audit.Event, filters ...audit.Filter) *audit.Event {
	sel := audit.Select(events, filters...)
	if len(sel) == 0 {
		return nil
	}
	first := sel[0]
	for _, e := range sel[1:] {
		if e.Time.Before(first.Time) {
			first = e
		}
	}
	return &first
}

func leLast(events []audit.Event, filters ...audit.Filter) *audit.Event {
	sel := audit.Select(events, filters...)
	if len(sel) == 0 {
		return nil
	}
	last := sel[0]
	for _, e := range sel[1:] {
		if !e.Time.Before(last.Time) {
			last = e
		}
	}
	return &last
}

// leLeaseRecord is one state of the Lease as a watch delivered it.
type leLeaseRecord struct {
	at          time.Time
	holder      string
	transitions int32
	rv          string
}

// leLeaseWatch records every change of one Lease.
type leLeaseWatch struct {
	mu      sync.Mutex
	records []leLeaseRecord
	cancel  context.CancelFunc
	done    chan struct{}
}

// relWatchLease watches the Lease until stop or the end of the test.
func relWatchLease(t *testing.T, kube kubernetes.Interface, namespace, name string) *leLeaseWatch {
	ctx, cancel := context.WithCancel(t.Context())
	w := &leLeaseWatch{cancel: cancel, done: make(chan struct{})}
	t.Cleanup(w.stop)
	go func() {
		defer close(w.done)
		rv := ""
		for ctx.Err() == nil {
			wi, err := kube.CoordinationV1().Leases(namespace).Watch(ctx, metav1.ListOptions{
				FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
				ResourceVersion: rv,
			})
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(relPoll):
				}
				continue
			}
			for ev := range wi.ResultChan() {
				if ev.Type == watch.Error {
					rv = "" // expired: start again from the current state
					continue
				}
				lease, ok := ev.Object.(*coordinationv1.Lease)
				if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
					continue
				}
				rv = lease.ResourceVersion
				w.mu.Lock()
				w.records = append(w.records, leLeaseRecord{
					at:          time.Now(),
					holder:      ptr.Deref(lease.Spec.HolderIdentity, ""),
					transitions: ptr.Deref(lease.Spec.LeaseTransitions, 0),
					rv:          rv,
				})
				w.mu.Unlock()
			}
			wi.Stop()
		}
	}()
	return w
}

func (w *leLeaseWatch) stop() {
	w.cancel()
	<-w.done
}

func (w *leLeaseWatch) history() []leLeaseRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]leLeaseRecord(nil), w.records...)
}

func leFormatHistory(h []leLeaseRecord) string {
	var s string
	for _, rec := range h {
		s += fmt.Sprintf("%s rv=%s holder=%q transitions=%d\n", rec.at.Format(time.StampMilli), rec.rv, rec.holder, rec.transitions)
	}
	return s
}
