package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
)

const (
	// lfRequestTimeout is how long a replica lets one request for its
	// Lease take before it abandons it, under the sharding tests'
	// timings: queue/shard's rule (queue/internal/lease.RequestTimeout,
	// which this module cannot import) gives 3s, the lesser of
	// LeaseDuration-RenewDeadline and half of RenewDeadline-RetryPeriod.
	lfRequestTimeout = min(shLeaseDuration-shRenewDeadline, (shRenewDeadline-shRetryPeriod)/2)
	// lfSlow and lfSlower are the delays of the slow renewals: half the
	// request timeout (1.5s), and all of it but a second (2s), which a
	// loaded machine's TLS, proxy and etcd round trip fit in.
	lfSlow   = lfRequestTimeout / 2
	lfSlower = lfRequestTimeout - time.Second
	// lfEarly and lfLate bound how far before and after lfRequestTimeout
	// the proxy may see the replica give up a hung renewal: the request
	// reaches the proxy a little after the replica starts its clock, and
	// a loaded machine runs the cancellation late. Abandoned within
	// lfRequestTimeout+lfLate (5s), a renewal sent RetryPeriod (2s) after
	// the last one still leaves its retry a second within the renew
	// deadline (8s); a timeout of the renew deadline is far past it.
	lfEarly, lfLate = 250 * time.Millisecond, 2 * time.Second
	// lfFoos exist from the start; lfNewFoos are created while every
	// Lease request of the replica hangs.
	lfFoos, lfNewFoos = 45, 15
)

// lfSlowRenewals are the faults the proxy gives the renewals of the slowed
// replica's Lease, in order, while the renewals are slow; later ones are
// delayed lfSlow until the test ends the slow period.
//
// A replica's claims are valid until RenewDeadline (8s) after it sent the
// latest renewal that came back through its Lease informer; it renews
// every RetryPeriod (2s), or as soon as the renewal in flight ends if that
// is later, and the proxy delays a renewal before the API server sees it,
// so that it also comes back late. Back-to-back renewals of lfSlower each
// leave the latest one back at most 2*lfSlower (4s) old, plus the watch's
// delay: 4s to spare. The hung renewal goes out RetryPeriod after the one
// before it (that one, lfSlow, ended earlier) and is abandoned after
// lfRequestTimeout; its retry goes out at once and, lfSlow later, comes
// back 2s+3s+1.5s = 6.5s after the last renewal that came back was sent:
// 1.5s to spare. The rule leaves room for one hung request and a quick
// retry within the renew deadline, not for a hung one between two that
// take their whole timeout; that is the simulation's to explore.
var lfSlowRenewals = []requestFault{
	{delay: lfSlower}, {delay: lfSlower}, {delay: lfSlow},
	{hang: true},
	{delay: lfSlow}, {delay: lfSlow}, {delay: lfSlower}, {delay: lfSlower},
}

// lfTookOver matches a replica's log line saying it took over the keys of
// a member that left.
var lfTookOver = regexp.MustCompile(`"Took over the keys of a member that left" .*left="([^"]+)"`)

// lfRevoked matches a replica's log line saying it revoked every claim,
// with the reason.
var lfRevoked = regexp.MustCompile(`"Every claim is revoked" err="((?:[^"\\]|\\.)*)"`)

// lfPhase is what the proxy does with the Lease requests of the replica
// behind it.
type lfPhase int

const (
	lfForward lfPhase = iota // forwards them at once
	lfSlowing                // delays the renewals as lfSlowRenewals says
	lfHanging                // hangs every one: reads, writes, lists and watches
)

// lfFaults is the rule of the proxy in front of one replica: it picks out
// the replica's requests for Leases and holds them as the phase says.
type lfFaults struct {
	mu sync.Mutex
	// lease is the name of the replica's Lease; phase what happens to
	// Lease requests; renewals counts the renewals met while slowing.
	lease    string
	phase    lfPhase
	renewals int
}

// set enters phase for the Lease lease and returns when.
func (f *lfFaults) set(phase lfPhase, lease string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.phase, f.lease = phase, lease
	return time.Now()
}

func (f *lfFaults) rule(r *http.Request) requestFault {
	if !strings.HasPrefix(r.URL.Path, "/apis/coordination.k8s.io/") || !strings.Contains(r.URL.Path, "/leases") {
		return requestFault{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.phase {
	case lfHanging:
		return requestFault{hang: true}
	case lfSlowing:
		renewal := (r.Method == http.MethodPut || r.Method == http.MethodPatch) &&
			strings.HasSuffix(r.URL.Path, "/namespaces/"+relLeaseNamespace+"/leases/"+f.lease)
		if !renewal {
			return requestFault{}
		}
		n := f.renewals
		f.renewals++
		if n < len(lfSlowRenewals) {
			return lfSlowRenewals[n]
		}
		return requestFault{delay: lfSlow}
	}
	return requestFault{}
}

// TestShardLeaseRenewalFaults runs three examples/foo --sharded replicas,
// the first behind a proxy in HTTP mode (see faultProxy) that holds its
// requests for Leases and nothing else, and shows what a replica does when
// its Lease requests are slow or hang while everything else it sends is
// answered at once:
//
//  1. Slow renewals: for about twenty seconds every renewal of its Lease
//     reaches the API server late, each within the request timeout
//     (lfSlowRenewals: 2s, 2s, 1.5s, then one that hangs until the
//     replica abandons it, then 1.5s, 1.5s, 2s, 2s and 1.5s each until
//     the period ends), and every Foo changes right after the hung renewal
//     is abandoned. The replica keeps its keys: it abandons the hung
//     renewal after the request timeout and waits for every slow one,
//     revokes nothing, no replica counts a handoff or takes its keys, and
//     each changed Foo is written by its owner only, the slowed replica's
//     by it.
//  2. Hung requests: every Lease request of the same replica then hangs
//     (its Foo and Deployment requests still go through), just after its
//     Foos changed; new Foos are created, and its Foos change every half
//     second until it exits. It revokes every claim and
//     exits with the lost Lease, and the two others take its keys: the
//     audit log shows its last write of a Foo or Deployment completed
//     before its last renewal received plus the lease duration, and the
//     others' first write to one of its Foos after that point; its Foos,
//     changed again, are written by the survivors; and no Foo was written
//     by two replicas in overlapping windows (see TestSharding) over the
//     whole test.
func TestShardLeaseRenewalFaults(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	users := []string{"lease-0", "lease-1", "lease-2"}
	const faulty = 0
	r := newRelRig(t, relOptions(users...))
	ctx := t.Context()
	r.grantControllerRoles(users...)
	ns := r.createNamespace("lease-faults")

	apiserver, err := url.Parse(r.admin.Host)
	require.NoError(t, err)
	faults := &lfFaults{}
	proxy := startRequestFaultProxy(t, apiserver.Host, r.admin.CAData, faults.rule)
	proxied, err := r.cp.UserConfig(users[faulty])
	require.NoError(t, err)
	proxied.Host = "https://" + proxy.addr()
	proxied.CAData, proxied.CAFile = proxy.caPEM, ""

	args := []string{
		"--sharded",
		"--leader-elect-id=" + shGroup,
		"--leader-elect-namespace=" + relLeaseNamespace,
		"--leader-elect-lease-duration=" + shLeaseDuration.String(),
		"--leader-elect-renew-deadline=" + shRenewDeadline.String(),
		"--leader-elect-retry-period=" + shRetryPeriod.String(),
		"--resync=30s",
		"--workers=2",
		"--shutdown-timeout=10s",
	}
	g := newShardGroup(t, r, ns, users)
	g.start(faulty, users[faulty], r.writeKubeconfig(proxied, users[faulty]+"-proxied"), args)
	g.start(1, users[1], r.userKubeconfig(users[1]), args)
	g.start(2, users[2], r.userKubeconfig(users[2]), args)
	for i := range 3 {
		g.joined(i)
	}
	three := []string{g.member[users[0]], g.member[users[1]], g.member[users[2]]}
	g.waitLeases(three)
	waitShardOwnership(ctx, t, g.replicas, shGroup, 0, waitTimeout)
	faultyUser, faultyLease, replica := users[faulty], g.member[users[faulty]], g.replicas[faulty]
	survivors := []*process{g.replicas[1], g.replicas[2]}
	owned := func(name string) bool { return g.ownerOf(three, name) == faultyUser }
	first := g.createFoos("first", lfFoos)
	g.convergeAll(first)
	for name, ws := range g.writers(r.auditLog(), begin) {
		require.Equal(t, []string{g.ownerOf(three, name)}, ws, "Foo %s is written by its owner only", name)
	}

	// 1. Slow renewals, one hung: the replica keeps its keys.
	handoffs := lfHandoffs(ctx, t, g.replicas)
	slowFrom := faults.set(lfSlowing, faultyLease)
	lfWaitHeld(t, proxy, replica, "the hung renewal abandoned", func(held []heldRequest) bool {
		for _, h := range held {
			if h.fault.hang {
				return true
			}
		}
		return false
	})
	changed := g.changeAll(first)
	g.convergeAll(first)
	lfWaitHeld(t, proxy, replica, "every scheduled slow renewal ended", func(held []heldRequest) bool {
		return len(held) >= len(lfSlowRenewals)
	})
	slowTo := faults.set(lfForward, faultyLease)

	held := proxy.heldRequests()
	var delays []time.Duration
	var hung heldRequest
	retryAfter := time.Duration(-1)
	for i, h := range held {
		if h.fault.hang {
			hung = h
			require.True(t, h.abandoned, "the hung renewal ends only when the replica gives it up")
			if i+1 < len(held) {
				retryAfter = held[i+1].at.Sub(h.at.Add(h.held))
			}
			continue
		}
		delays = append(delays, h.fault.delay)
		assert.False(t, h.abandoned, "a renewal delayed %s, within the request timeout %s, is waited for", h.fault.delay, lfRequestTimeout)
	}
	t.Logf("slow renewals for %s: %d renewals of %s delayed by %s; one hung until %s gave it up after %s (request timeout %s), its retry reached the proxy %s later",
		slowTo.Sub(slowFrom).Round(time.Millisecond), len(delays), faultyUser, relFmtDurations(delays), faultyUser,
		hung.held.Round(time.Millisecond), lfRequestTimeout, retryAfter.Round(time.Millisecond))
	assert.True(t, hung.held > lfRequestTimeout-lfEarly && hung.held < lfRequestTimeout+lfLate,
		"the hung renewal is abandoned after the request timeout (%s), in time to retry within the renew deadline: after %s", lfRequestTimeout, hung.held)
	events := r.auditLog()
	renewals := audit.Select(events, audit.ByUser(faultyUser), audit.Writes(), audit.Succeeded(), ptLeaseOf(faultyLease))
	var gaps []time.Duration
	var longest time.Duration
	for i := 1; i < len(renewals); i++ {
		if renewals[i].Time.Before(slowFrom) || renewals[i].Time.After(slowTo) {
			continue
		}
		gap := renewals[i].Time.Sub(renewals[i-1].Time)
		gaps = append(gaps, gap)
		longest = max(longest, gap)
	}
	t.Logf("renewals of %s the API server received during the slow period, each after the one before by: %s", faultyUser, relFmtDurations(gaps))
	assert.Less(t, longest, shRenewDeadline, "the renewals of %s landed within its renew deadline of each other", faultyUser)

	require.False(t, replica.exited(), "%s runs on", faultyUser)
	assert.NotContains(t, replica.out.String(), "Every claim is revoked", "%s keeps its claims", faultyUser)
	for _, p := range survivors {
		for _, m := range lfTookOver.FindAllStringSubmatch(p.out.String(), -1) {
			assert.NotEqual(t, faultyLease, m[1], "%s takes no key of %s", p.name, faultyUser)
		}
	}
	assert.Equal(t, handoffs, lfHandoffs(ctx, t, g.replicas), "no replica counts a handoff")
	waitShardOwnership(ctx, t, g.replicas, shGroup, len(first), waitTimeout)
	slowWrote := 0
	for name, ws := range g.writers(events, changed) {
		assert.Equal(t, []string{g.ownerOf(three, name)}, ws, "during the slow renewals, Foo %s is written by its owner only", name)
		if owned(name) {
			slowWrote++
		}
	}
	assert.NotZero(t, slowWrote, "the reconciles of %s go on", faultyUser)
	t.Logf("during the slow renewals, %s wrote the %d changed Foos it owns; no handoff", faultyUser, slowWrote)

	// 2. Every Lease request hangs, just after the replica's Foos
	// changed: it hands its keys over.
	var mine []string
	for _, name := range first {
		if owned(name) {
			mine = append(mine, name)
		}
	}
	exited := make(chan time.Time, 1)
	go func(p *process) {
		<-p.done // closed at the latest when the test's cleanup kills it
		exited <- time.Now()
	}(replica)
	g.changeAll(mine)
	hangAt := faults.set(lfHanging, faultyLease)
	created := g.createFoos("during-hang", lfNewFoos)
	// Its Foos change every half second until it exits, so that it has
	// work to do up to the moment its claims lapse.
	flips := 0
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		if replica.exited() {
			return true, nil
		}
		g.changeAll(mine)
		flips++
		return false, nil
	})
	require.NoError(t, err, "%s exits once its Lease requests hang (still running %s after they began to)", faultyUser, time.Since(hangAt).Round(time.Millisecond))
	exitedAt := <-exited
	handoffAt, _ := waitShardOwnership(ctx, t, survivors, shGroup, len(g.all), waitTimeout)
	out := replica.out.String()
	assert.NotEqual(t, 0, replica.cmd.ProcessState.ExitCode(), "%s exits with an error", faultyUser)
	assert.Contains(t, out, "Every claim is revoked", "%s revoked its claims", faultyUser)
	assert.Contains(t, out, "lost the Lease", "%s exits with the lost Lease", faultyUser)
	var hungFor []time.Duration
	for _, h := range proxy.heldRequests() {
		if h.fault.hang && h.at.After(hangAt) && h.method == http.MethodPut {
			hungFor = append(hungFor, h.held)
		}
	}
	t.Logf("every Lease request of %s hangs: %d renewals hung, given up after %s; its %d Foos changed %d times meanwhile; it exited %s after the hang began, the survivors own every Foo %s after it",
		faultyUser, len(hungFor), relFmtDurations(hungFor), len(mine), flips, exitedAt.Sub(hangAt).Round(time.Millisecond), handoffAt.Sub(hangAt).Round(time.Millisecond))
	for _, m := range ptRenewFailed.FindAllStringSubmatch(out, -1) {
		t.Logf("%s: could not renew: %s", faultyUser, m[1])
	}
	if m := lfRevoked.FindStringSubmatch(out); m != nil {
		t.Logf("%s: every claim is revoked: %s", faultyUser, m[1])
	}

	// Its Foos change again: the survivors write them.
	var orphans []string
	for _, name := range g.all {
		if owned(name) {
			orphans = append(orphans, name)
		}
	}
	changedAgain := g.changeAll(orphans)
	g.convergeAll(g.all)

	events = r.auditLog()
	done, err := ptCompletions(r.cp.AuditLogPath())
	require.NoError(t, err)
	var lastRequest time.Time
	for _, e := range audit.Select(events, audit.ByUser(faultyUser), lfLeases) {
		lastRequest = ptLatest(lastRequest, e.Time)
	}
	assert.Less(t, lastRequest.Sub(hangAt), ptLateRequest, "no Lease request of %s passes the proxy once they hang", faultyUser)
	renewals = audit.Select(events, audit.ByUser(faultyUser), audit.Writes(), audit.Succeeded(), ptLeaseOf(faultyLease))
	require.NotEmpty(t, renewals, "%s renewed its Lease", faultyUser)
	var lastRenewal time.Time
	for _, e := range renewals {
		lastRenewal = ptLatest(lastRenewal, e.Time)
	}
	// The others count the member gone LeaseDuration after they saw its
	// last renewal, which they saw after the API server received it.
	expiry := lastRenewal.Add(shLeaseDuration)
	var lastWrite audit.Event
	var lastWriteDone time.Time
	wroteDuringHang := 0
	for _, e := range shFooWrites(events, ns, []string{faultyUser}) {
		d, ok := done[e.AuditID]
		require.True(t, ok, "the audit log has the completion of %s", e)
		if d.After(lastWriteDone) {
			lastWrite, lastWriteDone = e, d
		}
		if e.Time.After(hangAt) {
			wroteDuringHang++
		}
	}
	takeover := shTakeover(t, events, ns, users, hangAt, faultyUser, owned)
	t.Logf("%s: last renewal received at hang%+.3fs (one the proxy forwarded before, if later), its Lease could expire %s after the hang; %d writes of Foos while its Lease requests hung, the last (%s) completed %s after the hang, %s before it exited and %s before that expiry; the survivors' first write to one of its Foos %s after the hang",
		faultyUser, lastRenewal.Sub(hangAt).Seconds(), expiry.Sub(hangAt).Round(time.Millisecond), wroteDuringHang,
		lastWrite, lastWriteDone.Sub(hangAt).Round(time.Millisecond), exitedAt.Sub(lastWriteDone).Round(time.Millisecond), expiry.Sub(lastWriteDone).Round(time.Millisecond), takeover.Round(time.Millisecond))
	assert.True(t, lastWriteDone.Before(expiry), "%s stopped writing (last at %s) before its Lease could expire (%s)",
		faultyUser, lastWriteDone.Format(time.StampMicro), expiry.Format(time.StampMicro))
	assert.True(t, hangAt.Add(takeover).After(expiry), "the survivors took its Foos (first at %s) only after its Lease could expire (%s)",
		hangAt.Add(takeover).Format(time.StampMicro), expiry.Format(time.StampMicro))
	assert.Less(t, takeover, shTakeoverBound, "takeover within the lease duration, a relist and a few seconds")
	two := []string{g.member[users[1]], g.member[users[2]]}
	for name, ws := range g.writers(events, changedAgain) {
		if owned(name) {
			assert.Equal(t, []string{g.ownerOf(two, name)}, ws, "after the handoff, Foo %s of %s is written by its new owner only", name, faultyUser)
		}
	}

	writes := shFooWrites(events, ns, users)
	assert.Empty(t, shOverlaps(writes), "Foos written by two replicas in overlapping windows")
	tally := map[string]int{}
	for _, e := range writes {
		tally[e.User]++
	}
	t.Logf("%d Foos (%d created while the Lease requests hung); writes per replica: %v", len(g.all), len(created), tally)
	relAssertNoDataRace(t, g.replicas...)
	t.Logf("done after %s", time.Since(begin).Round(time.Millisecond))
}

// lfLeases selects requests for Leases in the Lease namespace.
func lfLeases(e audit.Event) bool {
	return e.APIGroup == "coordination.k8s.io" && e.Resource == "leases" && e.Namespace == relLeaseNamespace
}

// lfWaitHeld polls the proxy's held requests until done says so; it fails
// t after waitTimeout, or as soon as p has exited.
func lfWaitHeld(t *testing.T, proxy *faultProxy, p *process, what string, done func([]heldRequest) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), relPoll, waitTimeout, true, func(context.Context) (bool, error) {
		if p.exited() {
			out := strings.TrimSpace(p.out.String())
			return false, fmt.Errorf("%s exited (%v), saying: %s", p.name, p.waitErr, out[strings.LastIndex(out, "\n")+1:])
		}
		return done(proxy.heldRequests()), nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("timed out after %s", waitTimeout)
	}
	require.NoError(t, err, "waiting for %s", what)
}

// lfHandoffs reads ctrlkit_shard_handoffs_total of every replica.
func lfHandoffs(ctx context.Context, t *testing.T, replicas []*process) []float64 {
	t.Helper()
	var out []float64
	for _, p := range replicas {
		code, text, err := httpGet(ctx, p.metricsURL+"/metrics")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "/metrics of %s", p.name)
		n, _ := metricSum(text, "ctrlkit_shard_handoffs_total", map[string]string{"group": shGroup})
		out = append(out, n)
	}
	return out
}
