package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/queue/shard"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
)

// Membership timings of the sharding tests: the others take a replica's
// keys 12s after they last saw its Lease renewed; replicas renew every 2s
// and stop if they cannot renew for 8s. Shorter than client-go's defaults
// (15s, 10s, 2s) so that the tests are quick, and long enough that a
// replica keeps its Lease on a machine so loaded that a renewal takes
// seconds: the tight margins of the protocol are the simulation's to test
// (queue/shard's TestSimulation), not a real-process test's.
const (
	shLeaseDuration = 12 * time.Second
	shRenewDeadline = 8 * time.Second
	shRetryPeriod   = 2 * time.Second
	shGroup         = "foo-shard"
	// shTakeoverBound bounds the first write to a killed replica's Foo:
	// the lease duration, then the relist of the survivors' sharded
	// informers, which client-go's reflector starts 0.8 to 1.6s after it
	// is asked and twice as late for every further relist within two
	// minutes (this test asks three within a minute), then the write.
	shTakeoverBound = shLeaseDuration + 12*time.Second
	// shRefusalBound bounds how long a Foo that names another replica's
	// Foo's Deployment waits for its refusal: one reconcile, whose create
	// meets AlreadyExists and reads the Deployment back, with a busy
	// machine's scheduling delays.
	shRefusalBound = 5 * time.Second
)

var shJoined = regexp.MustCompile(`"Joined the group" .*member="([^"]+)"`)

// TestSharding runs examples/foo replicas with --sharded, each as its own
// static-token user so the audit log tells them apart; each replica caches
// only the Foos it owns and their Deployments. It shows: every Foo is
// written by the replica rendezvous hashing gives it, and the split is
// even; a fourth replica joining while settled takes about a quarter of
// the Foos, and when every Foo then changes, each is written by its owner
// only; kill -9 of a replica during convergence and of another when settled
// hands their Foos to the survivors, and Foos created after a kill converge
// within the lease duration, a relist and a few seconds; the survivors then act on
// the Foos and Deployments they took over (deleted Deployments are created
// again, changed Foos converge, each written by its owner only); a replica
// killed with kill -9 and restarted at once under the same --identity
// takes its Lease over and writes the Foos of its share when they change;
// a Foo naming the Deployment of a Foo another replica owns is refused
// (Warning, Ready=False) within seconds, as an unsharded replica refuses
// it, although its owner's cache leaves that Deployment out; and, for
// every Foo, no two processes wrote it in overlapping windows, and
// every Foo has converged at the end.
//
// The overlap check: for each Foo, the writes of the controller users
// that concern it (its status, and its Deployment, which has the Foo's
// name) are grouped by user; each user's window runs from its first to its
// last such write (times the API server received them). A key that moved
// from A to B must show A's window ending before B's begins: any two
// windows of one Foo must be disjoint.
func TestSharding(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	// Replica i runs as users[i] with --identity=users[i], but for the
	// last: the process that restarts replica 2 under its identity, as a
	// user of its own so that the audit log tells the two processes apart.
	users := []string{"foo-shard-0", "foo-shard-1", "foo-shard-2", "foo-shard-3", "foo-shard-2-restarted"}
	r := newRelRig(t, relOptions(users...))
	ctx := t.Context()
	r.grantControllerRoles(users...)
	ns := r.createNamespace("sharded")

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
	start := func(i int, identity string) {
		g.start(i, identity, r.userKubeconfig(users[i]), args)
	}
	joined, ownerOf, createFoos, convergeAll, changeAll := g.joined, g.ownerOf, g.createFoos, g.convergeAll, g.changeAll
	membersOf := func(idx ...int) []string {
		var names []string
		for _, i := range idx {
			names = append(names, member[users[i]])
		}
		return names
	}
	// waitMembers waits until the group's Leases are those of idx.
	waitMembers := func(idx ...int) { t.Helper(); g.waitLeases(membersOf(idx...)) }
	writers := func(since time.Time) map[string][]string { return g.writers(r.auditLog(), since) }

	// Three replicas; 60 Foos.
	for i := range 3 {
		start(i, users[i])
	}
	for i := range 3 {
		joined(i)
	}
	waitMembers(0, 1, 2)
	three := membersOf(0, 1, 2)
	first := createFoos("first", 60)
	convergeAll(first)
	split := map[string]int{}
	for name, ws := range writers(begin) {
		require.Len(t, ws, 1, "Foo %s written by one replica", name)
		assert.Equal(t, ownerOf(three, name), ws[0], "Foo %s written by its owner", name)
		split[ws[0]]++
	}
	t.Logf("split of %d Foos over 3 replicas: %v", len(first), split)
	for _, u := range users[:3] {
		assert.Greater(t, split[u], len(first)/6, "%s has a fair share", u)
	}

	// A Foo that names the Deployment of a Foo another replica owns: its
	// owner's cache leaves that Deployment out, and still the Foo is
	// refused as an unsharded replica refuses it, a Warning and
	// Ready=False within shRefusalBound, with the Deployment left alone.
	taken := first[0]
	claimer := ""
	for i := 0; claimer == ""; i++ {
		if name := fmt.Sprintf("claimer-%d", i); ownerOf(three, name) != ownerOf(three, taken) {
			claimer = name
		}
	}
	takenDeployment, err := r.kube.AppsV1().Deployments(ns).Get(ctx, taken, metav1.GetOptions{})
	require.NoError(t, err)
	claimedAt := time.Now()
	claim, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, relNewFoo(claimer, taken, 1), metav1.CreateOptions{})
	require.NoError(t, err)
	r.waitWarning(t, ns, claim, samplev1alpha1.ReasonErrResourceExists, fmt.Sprintf(foo.MessageResourceExists, taken))
	r.waitFooRefused(t, ns, claimer, samplev1alpha1.ReasonErrResourceExists)
	refusedIn := time.Since(claimedAt)
	t.Logf("Foo %s (owned by %s) naming the Deployment of %s (owned by %s): refused %s after its create",
		claimer, ownerOf(three, claimer), taken, ownerOf(three, taken), refusedIn.Round(time.Millisecond))
	assert.Less(t, refusedIn, shRefusalBound, "refused as an unsharded replica refuses it")
	after, err := r.kube.AppsV1().Deployments(ns).Get(ctx, taken, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, takenDeployment.ResourceVersion, after.ResourceVersion, "the other Foo's Deployment is left alone")
	require.NoError(t, r.foos.SamplecontrollerV1alpha1().Foos(ns).Delete(ctx, claimer, metav1.DeleteOptions{}))

	// A fourth replica joins while settled; then every Foo changes, so that
	// each owner writes.
	start(3, users[3])
	joined(3)
	joinedAt := time.Now()
	waitMembers(0, 1, 2, 3)
	four := membersOf(0, 1, 2, 3)
	moved := 0
	for _, name := range first {
		if ownerOf(three, name) != ownerOf(four, name) {
			moved++
			assert.Equal(t, users[3], ownerOf(four, name), "a Foo moves only to the replica that joined")
		}
	}
	t.Logf("the fourth replica joined: %d of %d Foos (%.0f%%) moved to it", moved, len(first), 100*float64(moved)/float64(len(first)))
	assert.InDelta(t, len(first)/4, moved, float64(len(first))/4*0.7, "about a quarter of the Foos move")
	// Once the handoff is complete, every replica sees four members and
	// the replicas own every Foo exactly once between them; then change
	// every Foo.
	shWaitHandoff(t, replicas, len(first), 0, 1, 2, 3)
	t.Logf("handoff to the fourth replica complete (every replica sees 4 members, each Foo owned once) %s after it was ready",
		time.Since(joinedAt).Round(time.Millisecond))
	changed := changeAll(first)
	convergeAll(first)
	for name, ws := range writers(changed) {
		assert.Equal(t, []string{ownerOf(four, name)}, ws, "after the join, Foo %s is written by its owner only", name)
	}

	// kill -9 of replica 0 while new Foos converge.
	during := createFoos("during", 30)
	killed := time.Now()
	relKillHard(t, replicas[0])
	convergedDuring := convergeAll(during)
	afterKill := createFoos("after-kill", 20)
	convergeAll(afterKill)
	t.Logf("kill -9 of %s during convergence: the %d Foos created before it converged %s after the kill",
		users[0], len(during), convergedDuring.Sub(killed).Round(time.Millisecond))
	takeover := shTakeover(t, r.auditLog(), ns, users, killed, users[0], func(name string) bool { return ownerOf(four, name) == users[0] })
	t.Logf("first write by a survivor to a Foo of %s: %s after the kill", users[0], takeover.Round(time.Millisecond))
	assert.Less(t, takeover, shTakeoverBound, "takeover after kill -9 within the lease duration, a relist and a few seconds")
	waitMembers(1, 2, 3) // the survivors delete its Lease after two lease durations

	// kill -9 of replica 1 when settled; Foos created after it that hash to
	// it converge within the lease duration, a relist and a few seconds.
	survivors := membersOf(1, 2, 3)
	killed = time.Now()
	relKillHard(t, replicas[1])
	orphans := createFoos("orphan", 20)
	var late []time.Duration
	for _, name := range orphans {
		r.waitFooConverged(t, ns, name, waitTimeout)
		if ownerOf(survivors, name) == users[1] {
			late = append(late, time.Since(killed))
		}
	}
	takeover = shTakeover(t, r.auditLog(), ns, users, killed, users[1], func(name string) bool { return ownerOf(survivors, name) == users[1] })
	t.Logf("kill -9 of %s when settled: first write to one of its Foos %s after the kill; its %d new Foos converged by %s",
		users[1], takeover.Round(time.Millisecond), len(late), relFmtDurations(late))
	assert.Less(t, takeover, shTakeoverBound, "takeover after kill -9 within the lease duration, a relist and a few seconds")
	// Once the survivors own every Foo between them, the Deployments of a
	// few Foos of replica 1 are deleted, and then every Foo changes: the
	// survivors have cached the Foos and Deployments they took over, and
	// see the deletes.
	shWaitHandoff(t, replicas, len(g.all), 2, 3)
	two := membersOf(2, 3)
	changed = time.Now()
	deleted := map[string]types.UID{} // Foo -> UID of its deleted Deployment
	for _, name := range g.all {
		if ownerOf(survivors, name) != users[1] || len(deleted) == 5 {
			continue
		}
		d, err := r.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, r.kube.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &d.UID}}))
		deleted[name] = d.UID
	}
	require.NotEmpty(t, deleted, "replica 1 owned Foos")
	for name, uid := range deleted {
		r.waitFooConvergedWith(t, ns, name, func(c *assert.CollectT, d *appsv1.Deployment) {
			assert.NotEqual(c, uid, d.UID, "Deployment %s created again", name)
		})
	}
	t.Logf("the survivors created the %d deleted Deployments of Foos of %s again %s after the deletes",
		len(deleted), users[1], time.Since(changed).Round(time.Millisecond))
	changeAll(g.all)
	convergeAll(g.all)
	for name, ws := range writers(changed) {
		assert.Equal(t, []string{ownerOf(two, name)}, ws, "after the kills, Foo %s is written by its owner only", name)
	}

	// kill -9 of replica 2 and a restart under its identity: the new
	// process takes the Lease over (the same member), owns the keys of
	// replica 2 once the handoff is complete, and writes every Foo of
	// them when every Foo changes.
	killed = time.Now()
	relKillHard(t, replicas[2])
	start(4, users[2])
	joined(4)
	assert.Equal(t, member[users[2]], member[users[4]], "the restarted process is the same member")
	assert.Contains(t, replicas[4].out.String(), "Taking over the Lease a former process of this identity left")
	shWaitHandoff(t, replicas, len(g.all), 3, 4)
	t.Logf("kill -9 of %s and a restart under its identity: handoff complete %s after the kill", users[2], time.Since(killed).Round(time.Millisecond))
	changed = changeAll(g.all)
	convergeAll(g.all)
	restarted := 0
	for name, ws := range writers(changed) {
		assert.Equal(t, []string{ownerOf(two, name)}, ws, "after the restart, Foo %s is written by its owner only", name)
		if ownerOf(two, name) == users[4] {
			restarted++
		}
	}
	assert.NotZero(t, restarted, "the restarted process wrote the Foos of its identity")

	// For every Foo, the writers' windows are disjoint.
	events := shFooWrites(r.auditLog(), ns, users)
	overlaps := shOverlaps(events)
	assert.Empty(t, overlaps, "Foos written by two replicas in overlapping windows")
	tally := map[string]int{}
	for _, e := range events {
		tally[e.User]++
	}
	t.Logf("%d Foos; writes per replica: %v", len(g.all), tally)
	relAssertNoDataRace(t, replicas...)
	t.Logf("done after %s", time.Since(begin).Round(time.Millisecond))
}

// shWaitHandoff waits until the replicas idx each see len(idx) members and
// own keys Foos between them (see waitShardOwnership).
func shWaitHandoff(t *testing.T, replicas []*process, keys int, idx ...int) {
	t.Helper()
	live := make([]*process, len(idx))
	for n, i := range idx {
		live[n] = replicas[i]
	}
	waitShardOwnership(t.Context(), t, live, shGroup, keys, waitTimeout)
}

// shFooWrites returns the writes of users that concern a Foo of ns: its
// status (named after the Foo) and its Deployment (the tests name it after
// the Foo), with Name the Foo's name, in the order the API server received
// them.
func shFooWrites(events []audit.Event, ns string, users []string) []audit.Event {
	var out []audit.Event
	for _, e := range audit.Select(events, audit.Writes(), audit.Succeeded()) {
		if e.Namespace != ns || e.Name == "" || !slices.Contains(users, e.User) {
			continue
		}
		if (e.APIGroup == "samplecontroller.k8s.io" && e.Resource == "foos") || (e.APIGroup == "apps" && e.Resource == "deployments") {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// shOverlaps describes every Foo whose writers' windows intersect.
func shOverlaps(events []audit.Event) []string {
	type window struct{ from, to time.Time }
	windows := map[string]map[string]*window{} // Foo -> user -> window
	for _, e := range events {
		if windows[e.Name] == nil {
			windows[e.Name] = map[string]*window{}
		}
		w := windows[e.Name][e.User]
		if w == nil {
			windows[e.Name][e.User] = &window{e.Time, e.Time}
			continue
		}
		w.to = e.Time
	}
	var out []string
	for name, byUser := range windows {
		users := make([]string, 0, len(byUser))
		for u := range byUser {
			users = append(users, u)
		}
		sort.Strings(users)
		for i, a := range users {
			for _, b := range users[i+1:] {
				wa, wb := byUser[a], byUser[b]
				if !wa.to.Before(wb.from) && !wb.to.Before(wa.from) {
					out = append(out, fmt.Sprintf("%s: %s %s..%s and %s %s..%s", name,
						a, wa.from.Format(time.StampMilli), wa.to.Format(time.StampMilli),
						b, wb.from.Format(time.StampMilli), wb.to.Format(time.StampMilli)))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// shTakeover returns how long after killed a survivor first wrote a Foo
// that belonged to the killed user.
func shTakeover(t *testing.T, events []audit.Event, ns string, users []string, killed time.Time, dead string, belonged func(string) bool) time.Duration {
	t.Helper()
	for _, e := range shFooWrites(events, ns, users) {
		if e.Time.After(killed) && e.User != dead && belonged(e.Name) {
			return e.Time.Sub(killed)
		}
	}
	t.Fatalf("no survivor wrote a Foo of %s after the kill", dead)
	return 0
}

// shardGroup is what the sharding tests know of their replicas: the
// processes, the Lease name each user's replica logged when it joined,
// and the Foos they created.
type shardGroup struct {
	t        *testing.T
	r        *relRig
	ns       string
	users    []string
	replicas []*process
	member   map[string]string // user -> Lease name
	userOf   map[string]string // Lease name -> user
	all      []string
}

func newShardGroup(t *testing.T, r *relRig, ns string, users []string) *shardGroup {
	return &shardGroup{t: t, r: r, ns: ns, users: users, replicas: make([]*process, len(users)),
		member: map[string]string{}, userOf: map[string]string{}}
}

// start starts replica i as users[i] with identity, through kubeconfig.
func (g *shardGroup) start(i int, identity, kubeconfig string, args []string) {
	g.replicas[i] = g.r.startFoo(g.t, g.users[i], kubeconfig, slices.Concat(args, []string{"--identity=" + identity})...)
}

// joined waits until replica i is ready and records its Lease name.
func (g *shardGroup) joined(i int) {
	g.t.Helper()
	relWaitReadyz(g.t, g.replicas[i])
	m := shJoined.FindStringSubmatch(g.replicas[i].out.String())
	require.NotNil(g.t, m, "%s logged its member name", g.users[i])
	g.member[g.users[i]], g.userOf[m[1]] = m[1], g.users[i]
}

// waitLeases waits until the group's Leases are want.
func (g *shardGroup) waitLeases(want []string) {
	g.t.Helper()
	require.EventuallyWithT(g.t, func(c *assert.CollectT) {
		leases, err := g.r.kube.CoordinationV1().Leases(relLeaseNamespace).List(g.t.Context(), metav1.ListOptions{LabelSelector: shard.LabelGroup + "=" + shGroup})
		require.NoError(c, err)
		var names []string
		for _, l := range leases.Items {
			names = append(names, l.Name)
		}
		assert.ElementsMatch(c, want, names)
	}, waitTimeout, relPoll, "member Leases %v", want)
}

// ownerOf returns the user whose replica owns Foo name under members.
func (g *shardGroup) ownerOf(members []string, name string) string {
	return g.userOf[shard.Assign(members, g.ns+"/"+name)]
}

// createFoos creates n Foos named prefix-0 to prefix-(n-1).
func (g *shardGroup) createFoos(prefix string, n int) []string {
	g.t.Helper()
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		_, err := g.r.foos.SamplecontrollerV1alpha1().Foos(g.ns).Create(g.t.Context(), relNewFoo(names[i], names[i], int32(i%2)), metav1.CreateOptions{})
		require.NoError(g.t, err)
	}
	g.all = append(g.all, names...)
	return names
}

// convergeAll waits until every Foo of names has converged, and returns
// when they had.
func (g *shardGroup) convergeAll(names []string) time.Time {
	g.t.Helper()
	for _, name := range names {
		g.r.waitFooConverged(g.t, g.ns, name, waitTimeout)
	}
	return time.Now()
}

// changeAll flips spec.replicas of every Foo of names, so that each owner
// has to write, and returns when it began.
func (g *shardGroup) changeAll(names []string) time.Time {
	g.t.Helper()
	changed := time.Now()
	foos := g.r.foos.SamplecontrollerV1alpha1().Foos(g.ns)
	for _, name := range names {
		// The owner writes the Foo's status meanwhile: read it again
		// after a conflict.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			f, err := foos.Get(g.t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			f.Spec.Replicas = ptr.To(1 - *f.Spec.Replicas)
			_, err = foos.Update(g.t.Context(), f, metav1.UpdateOptions{})
			return err
		})
		require.NoError(g.t, err)
	}
	return changed
}

// writers returns, per Foo, the controller users that wrote it since,
// from events of the audit log.
func (g *shardGroup) writers(events []audit.Event, since time.Time) map[string][]string {
	out := map[string][]string{}
	for _, e := range shFooWrites(events, g.ns, g.users) {
		if !e.Time.Before(since) && !slices.Contains(out[e.Name], e.User) {
			out[e.Name] = append(out[e.Name], e.User)
		}
	}
	return out
}
