package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

// The external example's deployment: its namespace and Lease.
const (
	extNamespace = "external-system"
	extLease     = "external-targets"
)

// TestExternalLeaderElection runs two replicas of examples/external with
// leader election on a real API server, each as its own static-token user
// with the example's RBAC, and kills the leader with SIGKILL. It shows from
// the audit log that the other replica takes the Lease over within twice
// the lease duration, does its first write after that, makes no list
// request once it leads (its informer has been warm all along), and that
// no replica writes outside its own leadership.
func TestExternalLeaderElection(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	root, err := repo.Root()
	require.NoError(t, err)
	waitBinary := buildInBackground(t, root, "external", true)
	users := []string{"external-0", "external-1"}
	cp := controlplane.StartT(t, relOptions(users...))
	bin := waitBinary()
	ctx := t.Context()
	admin := cp.Config()
	kube, err := kubernetes.NewForConfig(admin)
	require.NoError(t, err)

	// The example's namespace and Role, bound to each replica's user.
	deploy := filepath.Join(root, "examples", "external", "deploy")
	for _, file := range []string{"namespace.yaml", "role.yaml", "rbac.yaml"} {
		objs, err := controlplane.ReadObjects(filepath.Join(deploy, file))
		require.NoError(t, err)
		require.NoError(t, controlplane.CreateObjects(ctx, kube, objs...))
		for _, obj := range objs {
			if b, ok := obj.(*rbacv1.RoleBinding); ok {
				for _, user := range users {
					b := b.DeepCopy()
					b.Name += "-" + user
					b.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
					require.NoError(t, controlplane.CreateObjects(ctx, kube, b))
				}
			}
		}
	}
	kubeconfigs := map[string]string{}
	for _, user := range users {
		cfg, err := cp.UserConfig(user)
		require.NoError(t, err)
		userKube, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := userKube.CoreV1().ConfigMaps(extNamespace).List(ctx, metav1.ListOptions{Limit: 1})
			assert.NoError(c, err)
		}, waitTimeout, relPoll, "RBAC lets %s in", user)
		kubeconfigs[user] = filepath.Join(t.TempDir(), user+".kubeconfig")
		require.NoError(t, controlplane.WriteKubeconfig(kubeconfigs[user], cfg, user))
	}

	start := func(user string) *process {
		metricsAddr, healthAddr := freeAddress(t), freeAddress(t)
		p := startProcess(t, user, bin,
			"--kubeconfig="+kubeconfigs[user],
			"--metrics-bind-address="+metricsAddr, "--health-probe-bind-address="+healthAddr, "-v=2",
			"--namespace="+extNamespace, "--entry=web=color=blue,size=2", "--entry=db=size=10", "--resync=1h",
			"--leader-elect", "--leader-elect-namespace="+extNamespace,
			"--leader-elect-lease-duration="+leLeaseDuration.String(),
			"--leader-elect-renew-deadline="+leRenewDeadline.String(),
			"--leader-elect-retry-period="+leRetryPeriod.String())
		p.metricsURL, p.healthURL = "http://"+metricsAddr, "http://"+healthAddr
		return p
	}
	replicas := []*process{start(users[0]), start(users[1])}
	for _, p := range replicas {
		relWaitReadyz(t, p) // the standby too: its informer has synced
	}
	target := func(name string) (*corev1.ConfigMap, error) {
		return kube.CoreV1().ConfigMaps(extNamespace).Get(ctx, "target-"+name, metav1.GetOptions{})
	}
	waitTarget := func(name string, want map[string]string) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			cm, err := target(name)
			require.NoError(c, err)
			assert.Equal(c, want, cm.Data)
		}, waitTimeout, relPoll, "Target %s", name)
	}
	waitTarget("web", map[string]string{"color": "blue", "size": "2"})
	waitTarget("db", map[string]string{"size": "10"})

	leader := -1
	var leaderID string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		leader = -1
		for i, p := range replicas {
			if m := leBecameLeader.FindStringSubmatch(p.out.String()); m != nil {
				require.Equal(c, -1, leader, "two replicas say they lead")
				leader, leaderID = i, m[1]
			}
		}
		require.NotEqual(c, -1, leader, "a replica says it leads")
	}, waitTimeout, relPoll)
	standby := 1 - leader
	t.Logf("%s leads as %s", users[leader], leaderID)

	// kill -9 the leader, then change the Targets behind the operator's
	// back: only the new leader can put them right.
	killed := time.Now()
	relKillHard(t, replicas[leader])
	web, err := target("web")
	require.NoError(t, err)
	web.Data["color"] = "red"
	_, err = kube.CoreV1().ConfigMaps(extNamespace).Update(ctx, web, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, kube.CoreV1().ConfigMaps(extNamespace).Delete(ctx, "target-db", metav1.DeleteOptions{}))
	waitTarget("web", map[string]string{"color": "blue", "size": "2"})
	waitTarget("db", map[string]string{"size": "10"})
	corrected := time.Now()

	events, err := cp.AuditEvents()
	require.NoError(t, err)
	leaseWrites := func(user string) []audit.Event {
		return audit.Select(events, audit.ByUser(user), audit.Writes(), audit.ByResource("coordination.k8s.io", "leases"),
			audit.ByObject(extNamespace, extLease), audit.Succeeded())
	}
	objectWrites := func(user string) []audit.Event {
		return audit.Select(events, audit.ByUser(user), audit.Writes(), audit.ByNamespace(extNamespace),
			func(e audit.Event) bool { return e.Resource == "configmaps" || e.Resource == "events" })
	}
	takeover := leFirst(leaseWrites(users[standby]))
	require.NotNil(t, takeover, "%s took the Lease", users[standby])
	firstWrite := leFirst(objectWrites(users[standby]), audit.Since(killed))
	require.NotNil(t, firstWrite, "%s wrote after the kill", users[standby])
	t.Logf("kill -9 of the leader: %s took the Lease after %s, wrote first after %s (%s); Targets corrected after %s",
		users[standby], takeover.Time.Sub(killed).Round(time.Millisecond), firstWrite.Time.Sub(killed).Round(time.Millisecond),
		firstWrite, corrected.Sub(killed).Round(time.Millisecond))
	assert.Less(t, takeover.Time.Sub(killed), 2*leLeaseDuration, "takeover within twice the lease duration")
	assert.False(t, firstWrite.Time.Before(takeover.Time), "the new leader writes only after it took the Lease")

	// Warm caches: the new leader lists nothing once it leads.
	lists := audit.Select(events, audit.ByUser(users[standby]), audit.ByVerb("list"), audit.Since(takeover.Time))
	assert.Empty(t, audit.Lines(lists), "no list request by the new leader")
	before := audit.Select(events, audit.ByUser(users[standby]), audit.ByVerb("list"))
	t.Logf("%s listed %d times, all before it led: %s", users[standby], len(before), strings.Join(audit.Lines(before), "; "))

	// Never two writers: each replica's writes fall within its leadership,
	// from its first Lease write until its kill (for the first leader) or
	// now (for the second).
	for i, user := range users {
		lw := leaseWrites(user)
		require.NotEmpty(t, lw, "%s led", user)
		from, to := lw[0].Time, time.Now()
		if i == leader {
			to = killed
		}
		var outside []audit.Event
		for _, e := range objectWrites(user) {
			if e.Time.Before(from) || e.Time.After(to) {
				outside = append(outside, e)
			}
		}
		assert.Empty(t, audit.Lines(outside), "writes of %s outside its leadership %s .. %s", user, from.Format(time.StampMilli), to.Format(time.StampMilli))
	}
	// The windows do not overlap: the first leader was killed before the
	// second took the Lease.
	assert.True(t, takeover.Time.After(killed), "the second leadership starts after the first ended")

	// A clean stop releases the Lease.
	relTerminate(t, replicas[standby], 20*time.Second)
	lease, err := kube.CoordinationV1().Leases(extNamespace).Get(ctx, extLease, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, ptr.Deref(lease.Spec.HolderIdentity, ""), "released on SIGTERM")
	relAssertNoDataRace(t, replicas...)
	t.Logf("done after %s", time.Since(begin).Round(time.Millisecond))
}
