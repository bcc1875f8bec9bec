package e2e

import (
	"bufio"
	"encoding/json"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
)

const (
	// ptHang is how long the cut hangs the replica's connections before
	// it resets them: half the renew deadline, so that the replica, whose
	// last renewal came back at most a retry period before the cut, meets
	// both while it still holds claims: requests that never answer, then
	// connections reset and refused.
	ptHang = shRenewDeadline / 2
	// ptFoos exist before the cut, ptNewFoos are created during it.
	ptFoos, ptNewFoos = 60, 20
	// ptBusy Foos of the replica that is cut off change just before the
	// cut, so that it is cut off in the middle of its work.
	ptBusy = 6
	// ptLateRequest bounds how long after the cut the API server may
	// still stamp a request of the cut-off replica as received: only the
	// bytes the proxy forwarded before the cut, read late by a busy
	// server.
	ptLateRequest = shRenewDeadline
)

// TestShardPartition cuts one of three examples/foo --sharded replicas off
// the API server through a fault-injecting TCP proxy in front of
// kube-apiserver (only that replica's kubeconfig names the proxy), while
// the other two go on. The cut first hangs the replica's connections
// (nothing is forwarded, nothing answered, new connections are accepted
// and left alone) for ptHang, then resets them and refuses new ones. During
// the cut, Foos are created and the existing ones changed, those of the
// cut-off replica included. The audit log shows:
//
//  1. no Foo was written by two replicas in overlapping windows (see
//     TestSharding for the windows);
//  2. the cut-off replica stopped writing before its Lease could be taken
//     over: its last write of a Foo or Deployment completed (the audit
//     event's stageTimestamp) before its last successful Lease renewal was
//     received plus the lease duration, and the survivors' first write to
//     one of its Foos was received after that point;
//  3. every Foo converged during the cut, the survivors' first write to a
//     Foo of the cut-off replica within shTakeoverBound of the cut;
//  4. the cut-off replica exits with the lost Lease (the library's
//     contract: a replica that lost its membership starts over); once the
//     proxy heals, a new process of the same identity (the test plays the
//     kubelet) rejoins through the proxy, its Lease renewed or created
//     again, and when every Foo changes then, each is written by its owner
//     only, with the overlap check still clean.
func TestShardPartition(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	// Replica i runs as users[i] with --identity=users[i]; users[3] is the
	// process that rejoins under the identity of users[0], a user of its
	// own so that the audit log tells the two processes apart.
	users := []string{"foo-part-0", "foo-part-1", "foo-part-2", "foo-part-0-rejoined"}
	const cutOff = 0
	r := newRelRig(t, relOptions(users...))
	ctx := t.Context()
	r.grantControllerRoles(users...)
	ns := r.createNamespace("partition")

	apiserver, err := url.Parse(r.admin.Host)
	require.NoError(t, err)
	proxy := startFaultProxy(t, apiserver.Host)
	// proxiedKubeconfig is a user's kubeconfig with the proxy as server:
	// the API server's certificate names 127.0.0.1, as the proxy's
	// address does.
	proxiedKubeconfig := func(user string) string {
		cfg, err := r.cp.UserConfig(user)
		require.NoError(t, err)
		cfg.Host = "https://" + proxy.addr()
		return r.writeKubeconfig(cfg, user+"-proxied")
	}

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
	replicas, member := g.replicas, g.member
	start := func(i int, identity, kubeconfig string) { g.start(i, identity, kubeconfig, args) }
	joined, waitLeases, ownerOf, createFoos, convergeAll, writers := g.joined, g.waitLeases, g.ownerOf, g.createFoos, g.convergeAll, g.writers
	change := func(names []string) { g.changeAll(names) }

	// Three replicas, the first through the proxy; ptFoos Foos, each
	// written by its owner only.
	start(0, users[0], proxiedKubeconfig(users[0]))
	start(1, users[1], r.userKubeconfig(users[1]))
	start(2, users[2], r.userKubeconfig(users[2]))
	for i := range 3 {
		joined(i)
	}
	three := []string{member[users[0]], member[users[1]], member[users[2]]}
	waitLeases(three)
	// Every replica works under the three members before the first Foo.
	waitShardOwnership(ctx, t, replicas[:3], shGroup, 0, waitTimeout)
	cutUser, cutLease := users[cutOff], member[users[cutOff]]
	survivors := []*process{replicas[1], replicas[2]}
	first := createFoos("first", ptFoos)
	convergeAll(first)
	owned := func(name string) bool { return ownerOf(three, name) == cutUser }
	for name, ws := range writers(r.auditLog(), begin) {
		require.Equal(t, []string{ownerOf(three, name)}, ws, "before the cut, Foo %s is written by its owner only", name)
	}

	// The cut falls in the middle of the cut-off replica's work: a few of
	// its Foos change, and once it has written their Deployments (their
	// status, which mirrors the Deployments' available replicas, is still
	// to come) the proxy stops forwarding.
	var busy []string
	for _, name := range first {
		if owned(name) && len(busy) < ptBusy {
			busy = append(busy, name)
		}
	}
	require.NotEmpty(t, busy, "%s owns Foos", cutUser)
	change(busy)
	for _, name := range busy {
		f, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			d, err := r.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			require.NoError(c, err)
			assert.Equal(c, *f.Spec.Replicas, ptr.Deref(d.Spec.Replicas, -1))
		}, waitTimeout, relPoll, "%s writes the Deployment of Foo %s", cutUser, name)
	}
	exited := make(chan time.Time, 1)
	go func(p *process) {
		<-p.done // closed at the latest when the test's cleanup kills it
		exited <- time.Now()
	}(replicas[cutOff])

	proxy.cut()
	cutAt := time.Now()
	resetDone := make(chan struct{})
	resetTimer := time.AfterFunc(ptHang, func() {
		proxy.reset()
		close(resetDone)
	})
	t.Cleanup(func() { resetTimer.Stop() })
	t.Logf("cut %s off (its %d busy Foos' Deployments written); the proxy hangs its connections for %s, then resets them", cutUser, len(busy), ptHang)

	// During the cut, every other Foo changes, and new ones come.
	var rest []string
	for _, name := range first {
		if !slices.Contains(busy, name) {
			rest = append(rest, name)
		}
	}
	change(rest)
	created := createFoos("during-cut", ptNewFoos)
	handoffAt, _ := waitShardOwnership(ctx, t, survivors, shGroup, len(g.all), waitTimeout)
	t.Logf("the survivors own every Foo between them %s after the cut", handoffAt.Sub(cutAt).Round(time.Millisecond))
	convergedAt := convergeAll(g.all)
	t.Logf("every Foo (%d changed, %d created during the cut) converged %s after the cut", len(first), len(created), convergedAt.Sub(cutAt).Round(time.Millisecond))

	// The cut-off replica found out it lost its Lease and exited, as the
	// library's contract says it must, to be started over.
	var exitedAt time.Time
	select {
	case exitedAt = <-exited:
	case <-time.After(waitTimeout):
		require.FailNow(t, "the cut-off replica did not exit", "%s still runs %s after the cut", cutUser, time.Since(cutAt).Round(time.Millisecond))
	}
	out := replicas[cutOff].out.String()
	assert.NotEqual(t, 0, replicas[cutOff].cmd.ProcessState.ExitCode(), "%s exits with an error", cutUser)
	assert.Contains(t, out, "Every claim is revoked", "%s revoked its claims", cutUser)
	assert.Contains(t, out, "lost the Lease", "%s exits with the lost Lease", cutUser)
	select {
	case <-resetDone:
	case <-time.After(waitTimeout):
		require.FailNow(t, "the proxy did not reset the cut connections")
	}
	phase := "after the proxy reset its connections"
	if exitedAt.Sub(cutAt) < ptHang {
		phase = "while its connections hung"
	}
	t.Logf("%s exited %s after the cut, %s; proxy: %d connections forwarded, %d hung, %d refused, %d bytes held back and dropped",
		cutUser, exitedAt.Sub(cutAt).Round(time.Millisecond), phase, proxy.forwarded.Load(), proxy.hung.Load(), proxy.refused.Load(), proxy.dropped.Load())
	for _, m := range ptRenewFailed.FindAllStringSubmatch(out, -1) {
		msg, err := strconv.Unquote(`"` + m[1] + `"`)
		if err != nil {
			msg = m[1]
		}
		t.Logf("%s: could not renew: %s", cutUser, msg)
	}

	// What the audit log says about the cut, before the replica rejoins.
	events := r.auditLog()
	done, err := ptCompletions(r.cp.AuditLogPath())
	require.NoError(t, err)
	var lastRequest time.Time
	for _, e := range audit.Select(events, audit.ByUser(cutUser)) {
		lastRequest = ptLatest(lastRequest, e.Time)
	}
	t.Logf("the last request of %s the API server received: %s after the cut", cutUser, lastRequest.Sub(cutAt).Round(time.Millisecond))
	assert.Less(t, lastRequest.Sub(cutAt), ptLateRequest, "nothing of %s crosses the cut proxy", cutUser)

	renewals := audit.Select(events, audit.ByUser(cutUser), audit.Writes(), audit.Succeeded(), ptLeaseOf(cutLease))
	require.NotEmpty(t, renewals, "%s wrote its Lease", cutUser)
	lastRenewal := renewals[0].Time
	for _, e := range renewals {
		lastRenewal = ptLatest(lastRenewal, e.Time)
	}
	// The others count the member gone LeaseDuration after they saw its
	// last renewal, which they saw after the API server received it.
	expiry := lastRenewal.Add(shLeaseDuration)
	var lastWrite audit.Event
	var lastWriteDone time.Time
	for _, e := range shFooWrites(events, ns, []string{cutUser}) {
		d, ok := done[e.AuditID]
		require.True(t, ok, "the audit log has the completion of %s", e)
		if d.After(lastWriteDone) {
			lastWrite, lastWriteDone = e, d
		}
	}
	require.NotZero(t, lastWriteDone, "%s wrote Foos", cutUser)
	var takeover audit.Event
	for _, e := range shFooWrites(events, ns, users) {
		if e.User != cutUser && owned(e.Name) {
			takeover = e
			break
		}
	}
	require.NotZero(t, takeover.Time, "the survivors wrote Foos of %s", cutUser)
	t.Logf("%s: last Lease renewal %s before the cut, Lease could expire %s after the cut; its last write (%s) completed %s after the cut, %s before that expiry",
		cutUser, cutAt.Sub(lastRenewal).Round(time.Millisecond), expiry.Sub(cutAt).Round(time.Millisecond),
		lastWrite, lastWriteDone.Sub(cutAt).Round(time.Millisecond), expiry.Sub(lastWriteDone).Round(time.Millisecond))
	t.Logf("takeover: %s wrote Foo %s of %s %s after the cut, %s after that expiry",
		takeover.User, takeover.Name, cutUser, takeover.Time.Sub(cutAt).Round(time.Millisecond), takeover.Time.Sub(expiry).Round(time.Millisecond))
	assert.True(t, lastWriteDone.Before(expiry), "%s stopped writing (last at %s) before its Lease could expire (%s)",
		cutUser, lastWriteDone.Format(time.StampMicro), expiry.Format(time.StampMicro))
	assert.True(t, takeover.Time.After(expiry), "the survivors took its Foos (first at %s) only after its Lease could expire (%s)",
		takeover.Time.Format(time.StampMicro), expiry.Format(time.StampMicro))
	assert.Less(t, takeover.Time.Sub(cutAt), shTakeoverBound, "takeover within the lease duration, a relist and a few seconds")
	tookOver := regexp.MustCompile(`"Took over the keys of a member that left" .*left="` + regexp.QuoteMeta(cutLease) + `" after="([^"]+)"`)
	for _, p := range survivors {
		if m := tookOver.FindStringSubmatch(p.out.String()); m != nil {
			t.Logf("%s says it took over the keys of %s %s after it last saw its Lease change", p.name, cutUser, m[1])
		}
	}
	assert.Empty(t, shOverlaps(shFooWrites(events, ns, users)), "Foos written by two replicas in overlapping windows, during the cut")

	// The proxy heals, and a new process of the same identity, through the
	// proxy, rejoins: the same member, with its Lease renewed or created
	// again (the survivors delete the Leases of members gone for two lease
	// durations).
	proxy.heal()
	healedAt := time.Now()
	const rejoin = 3
	start(rejoin, cutUser, proxiedKubeconfig(users[rejoin]))
	joined(rejoin)
	require.Equal(t, cutLease, member[users[rejoin]], "the rejoining process is the same member")
	waitLeases(three)
	live := []*process{replicas[1], replicas[2], replicas[rejoin]}
	rejoinedAt, _ := waitShardOwnership(ctx, t, live, shGroup, len(g.all), waitTimeout)
	leaseWrites := audit.Select(r.auditLog(), audit.ByUser(users[rejoin]), audit.Writes(), audit.Succeeded(), ptLeaseOf(cutLease))
	require.NotEmpty(t, leaseWrites, "%s wrote the Lease %s", users[rejoin], cutLease)
	t.Logf("after the heal, %s rejoined as %s (its Lease: %s) and the three own every Foo once %s after the heal",
		users[rejoin], cutLease, leaseWrites[0].Verb, rejoinedAt.Sub(healedAt).Round(time.Millisecond))

	// Every Foo changes; each is written by its owner only, those of the
	// cut-off replica's share by the rejoined process.
	changedAt := time.Now()
	change(g.all)
	convergeAll(g.all)
	events = r.auditLog()
	rejoinedWrote := 0
	for name, ws := range writers(events, changedAt) {
		assert.Equal(t, []string{ownerOf(three, name)}, ws, "after the rejoin, Foo %s is written by its owner only", name)
		if ownerOf(three, name) == users[rejoin] {
			rejoinedWrote++
		}
	}
	assert.NotZero(t, rejoinedWrote, "the rejoined process wrote the Foos of its share")

	writes := shFooWrites(events, ns, users)
	assert.Empty(t, shOverlaps(writes), "Foos written by two replicas in overlapping windows")
	tally := map[string]int{}
	for _, e := range writes {
		tally[e.User]++
	}
	t.Logf("%d Foos; writes per replica: %v", len(g.all), tally)
	relAssertNoDataRace(t, replicas...)
	t.Logf("done after %s", time.Since(begin).Round(time.Millisecond))
}

// ptRenewFailed matches a replica's log line about a renewal of its
// membership Lease that failed, with the error.
var ptRenewFailed = regexp.MustCompile(`"Could not renew the membership Lease" .*err="((?:[^"\\]|\\.)*)"`)

// ptLeaseOf selects requests for the member Lease name.
func ptLeaseOf(name string) audit.Filter {
	return func(e audit.Event) bool {
		return e.APIGroup == "coordination.k8s.io" && e.Resource == "leases" && e.Namespace == relLeaseNamespace && e.Name == name
	}
}

// ptCompletions maps the audit ID of every request in the audit log at
// path to the time the API server completed it (the stageTimestamp of its
// ResponseComplete event), which package audit does not read.
func ptCompletions(path string) (map[string]time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e struct {
			AuditID        string    `json:"auditID"`
			Stage          string    `json:"stage"`
			StageTimestamp time.Time `json:"stageTimestamp"`
		}
		// A torn last line of a log still being written is skipped.
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Stage == "ResponseComplete" {
			out[e.AuditID] = e.StageTimestamp
		}
	}
	return out, sc.Err()
}

// ptLatest returns the later of a and b.
func ptLatest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
