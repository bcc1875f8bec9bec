package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

// The fleet example's names (examples/fleet).
const (
	flSourceLabel  = "fleet.ctrlkit.io/copy"
	flStatusPrefix = "status.fleet.ctrlkit.io/"
	flSystem       = "fleet-system"
	flApp          = "app"
	flSources      = 8
	// flMemberUser and flRotatedUser are the identities of the two
	// kubeconfigs the members accept, before and after the rotation.
	flMemberUser  = "fleet-member"
	flRotatedUser = "fleet-member-rotated"
	// The replicas' Lease timings, as in the sharding tests: room for a
	// loaded machine.
	flLeaseDuration = 12 * time.Second
	flRenewDeadline = 8 * time.Second
	flRetryPeriod   = 2 * time.Second
)

// fleetRig is the management cluster, the member clusters and the
// replicas of examples/fleet of TestFleet.
type fleetRig struct {
	t        *testing.T
	mgmt     *controlplane.ControlPlane
	mgmtKube kubernetes.Interface
	members  map[string]*controlplane.ControlPlane
	kube     map[string]kubernetes.Interface
	bin      string
	replicas map[string]*process
}

// TestFleet runs two sharded replicas of examples/fleet against three API
// servers: a management cluster holding the sources and the members'
// kubeconfig Secrets, and two member clusters. It shows, in order: the
// copies appear in the first member with every source's state "Synced"; a
// second member joins while the sources change, and both converge; the
// replica holding the second member is killed with kill -9 and the other
// takes it over; the first member's credentials are rotated and, from the
// first request with the new ones, the old ones are never used again; the
// second member's API server is killed (its state turns Unreachable) and
// restarted, and the change made meanwhile reaches it; the first member
// leaves and nothing is written to it after both replicas have dropped it.
// Throughout, the member audit logs show no copy written by two replicas in
// overlapping windows.
func TestFleet(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	root, err := repo.Root()
	require.NoError(t, err)
	waitBinary := buildInBackground(t, root, "fleet", true)
	r := &fleetRig{t: t, members: map[string]*controlplane.ControlPlane{}, kube: map[string]kubernetes.Interface{}, replicas: map[string]*process{}}
	memberOpts := controlplane.Options{Users: []controlplane.User{
		{Name: flMemberUser, Groups: []string{"system:masters"}},
		{Name: flRotatedUser, Groups: []string{"system:masters"}},
	}}
	mgmtOpts := controlplane.Options{Users: []controlplane.User{
		{Name: "fleet-0", Groups: []string{"system:masters"}},
		{Name: "fleet-1", Groups: []string{"system:masters"}},
	}}
	// The three API servers start side by side.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range []string{"mgmt", "east", "west"} {
		opts := memberOpts
		if name == "mgmt" {
			opts = mgmtOpts
		}
		wg.Go(func() {
			cp := controlplane.StartT(t, opts)
			mu.Lock()
			defer mu.Unlock()
			if name == "mgmt" {
				r.mgmt = cp
			} else {
				r.members[name] = cp
			}
		})
	}
	wg.Wait()
	require.NotNil(t, r.mgmt)
	require.Len(t, r.members, 2)
	r.bin = waitBinary()
	t.Logf("three API servers and the binary ready after %s", time.Since(begin).Round(time.Millisecond))
	r.mgmtKube, err = kubernetes.NewForConfig(r.mgmt.Config())
	require.NoError(t, err)
	for name, cp := range r.members {
		r.kube[name], err = kubernetes.NewForConfig(cp.Config())
		require.NoError(t, err)
	}
	ctx := t.Context()
	for _, ns := range []string{flSystem, flApp} {
		_, err := r.mgmtKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	r.setSources("v1")

	// Two replicas, one member.
	r.setMember("east", flMemberUser)
	r.start("fleet-0")
	r.start("fleet-1")
	r.waitCopies("v1", "east")
	t.Logf("east converged after %s", time.Since(begin).Round(time.Millisecond))

	// A second member joins while the sources change.
	r.setSources("v2")
	r.setMember("west", flMemberUser)
	r.waitCopies("v2", "east", "west")

	// kill -9 the replica that holds west: the other takes it over.
	holder := r.holder("west")
	t.Logf("%s holds west; killing it", holder)
	relKillHard(t, r.replicas[holder])
	delete(r.replicas, holder)
	r.setSources("v3")
	r.waitCopies("v3", "east", "west")
	survivor := slices.Collect(func(yield func(string) bool) {
		for id := range r.replicas {
			yield(id)
		}
	})[0]
	assert.Equal(t, survivor, r.holder("west"), "the survivor holds west")

	// New credentials for east: after the first request with them, the
	// old ones are not used again.
	r.setMember("east", flRotatedUser)
	r.setSources("v4")
	r.waitCopies("v4", "east", "west")
	events, err := r.members["east"].AuditEvents()
	require.NoError(t, err)
	byAgent := func(e audit.Event) bool { return strings.HasPrefix(e.UserAgent, "ctrlkit-fleet/") }
	rotated := audit.Select(events, byAgent, audit.ByUser(flRotatedUser))
	require.NotEmpty(t, rotated, "requests with the new credentials")
	firstRotated := rotated[0].Time
	assert.Empty(t, audit.Lines(audit.Select(events, byAgent, audit.ByUser(flMemberUser), audit.Since(firstRotated.Add(time.Millisecond)),
		func(e audit.Event) bool { return e.Stage != "ResponseComplete" || e.Verb != "watch" })),
		"requests with the old credentials after the new ones were used")

	// west's API server dies: its state turns Unreachable; a change made
	// meanwhile reaches it once it is back.
	require.NoError(t, r.members["west"].Kill(controlplane.KubeAPIServer))
	r.waitState("west", func(state string) bool { return strings.HasPrefix(state, "Unreachable") })
	r.setSources("v5")
	r.waitCopies("v5", "east")
	require.NoError(t, r.members["west"].Restart(ctx, controlplane.KubeAPIServer))
	r.waitCopies("v5", "east", "west")

	// east leaves: once no replica holds it, nothing is written to it.
	require.NoError(t, r.mgmtKube.CoreV1().Secrets(flSystem).Delete(ctx, "east", metav1.DeleteOptions{}))
	r.waitState("east", func(state string) bool { return state == "" })
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for id, p := range r.replicas {
			_, body, err := httpGet(ctx, p.metricsURL+"/metrics")
			require.NoError(c, err)
			_, held := metricSum(body, "ctrlkit_cluster_ready", map[string]string{"cluster": "east"})
			assert.False(c, held, "%s still holds east", id)
		}
	}, waitTimeout, pollEvery)
	left := time.Now()
	r.setSources("v6")
	r.waitCopies("v6", "west")
	events, err = r.members["east"].AuditEvents()
	require.NoError(t, err)
	assert.Empty(t, audit.Lines(audit.Select(events, byAgent, audit.Writes(), audit.Since(left))), "writes to east after it left")
	assert.Equal(t, "v5", r.copyData("east"), "east keeps the copies it had")

	// No copy was written by two replicas in overlapping windows.
	for name, cp := range r.members {
		events, err := cp.AuditEvents()
		require.NoError(t, err)
		checkDisjointWriters(t, name, audit.Select(events, byAgent, audit.Writes(), audit.ByResource("", "configmaps"), audit.ByNamespace(flApp)))
	}
	t.Logf("done after %s", time.Since(begin).Round(time.Millisecond))
}

// setSources creates the sources, or sets their data to version with a
// merge patch (the operator writes their annotations meanwhile).
func (r *fleetRig) setSources(version string) {
	ctx := r.t.Context()
	patch := []byte(fmt.Sprintf(`{"data":{"version":%q}}`, version))
	for i := range flSources {
		name := fmt.Sprintf("settings-%d", i)
		_, err := r.mgmtKube.CoreV1().ConfigMaps(flApp).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: flApp, Name: name, Labels: map[string]string{flSourceLabel: "true"}},
				Data: map[string]string{"version": version}}
			_, err = r.mgmtKube.CoreV1().ConfigMaps(flApp).Create(ctx, cm, metav1.CreateOptions{})
		}
		require.NoError(r.t, err)
	}
}

// setMember creates or updates the kubeconfig Secret of a member, with
// the credentials of user.
func (r *fleetRig) setMember(name, user string) {
	cfg, err := r.members[name].UserConfig(user)
	require.NoError(r.t, err)
	path := filepath.Join(r.t.TempDir(), name+".kubeconfig")
	require.NoError(r.t, controlplane.WriteKubeconfig(path, cfg, name))
	data, err := os.ReadFile(path)
	require.NoError(r.t, err)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: flSystem, Name: name, Labels: map[string]string{kubeconfig.Label: ""}},
		Data: map[string][]byte{kubeconfig.DataKey: data}}
	ctx := r.t.Context()
	_, err = r.mgmtKube.CoreV1().Secrets(flSystem).Update(ctx, s, metav1.UpdateOptions{})
	if err != nil {
		_, err = r.mgmtKube.CoreV1().Secrets(flSystem).Create(ctx, s, metav1.CreateOptions{})
	}
	require.NoError(r.t, err)
}

// start runs a replica as the management user id.
func (r *fleetRig) start(id string) {
	cfg, err := r.mgmt.UserConfig(id)
	require.NoError(r.t, err)
	path := filepath.Join(r.t.TempDir(), id+".kubeconfig")
	require.NoError(r.t, controlplane.WriteKubeconfig(path, cfg, id))
	metricsAddr, healthAddr := freeAddress(r.t), freeAddress(r.t)
	p := startProcess(r.t, id, r.bin, "--kubeconfig="+path, "--identity="+id, "--sharded",
		"--leader-elect-namespace="+flSystem, "--namespace="+flApp, "--members-namespace="+flSystem, "--probe-interval=1s",
		"--leader-elect-lease-duration="+flLeaseDuration.String(), "--leader-elect-renew-deadline="+flRenewDeadline.String(),
		"--leader-elect-retry-period="+flRetryPeriod.String(),
		"--metrics-bind-address="+metricsAddr, "--health-probe-bind-address="+healthAddr, "-v=2")
	p.metricsURL, p.healthURL = "http://"+metricsAddr, "http://"+healthAddr
	r.replicas[id] = p
}

// copyData returns the version of the first source's copy in a member, ""
// if there is none.
func (r *fleetRig) copyData(member string) string {
	cm, err := r.kube[member].CoreV1().ConfigMaps(flApp).Get(r.t.Context(), "settings-0", metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return cm.Data["version"]
}

// waitCopies waits until every source has version, its copy in each of
// members too, and the source says so.
func (r *fleetRig) waitCopies(version string, members ...string) {
	r.t.Helper()
	ctx := r.t.Context()
	require.EventuallyWithT(r.t, func(c *assert.CollectT) {
		for _, p := range r.replicas {
			require.False(c, p.exited(), "%s exited:\n%s", p.name, p.out.String())
		}
		for i := range flSources {
			name := fmt.Sprintf("settings-%d", i)
			src, err := r.mgmtKube.CoreV1().ConfigMaps(flApp).Get(ctx, name, metav1.GetOptions{})
			require.NoError(c, err)
			for _, member := range members {
				cp, err := r.kube[member].CoreV1().ConfigMaps(flApp).Get(ctx, name, metav1.GetOptions{})
				require.NoError(c, err, "%s in %s", name, member)
				assert.Equal(c, version, cp.Data["version"], "%s in %s", name, member)
				assert.Equal(c, "Synced", src.Annotations[flStatusPrefix+member], "state of %s in %s", name, member)
			}
		}
	}, waitTimeout, pollEvery, "copies of %s in %v", version, members)
}

// waitState waits until the first source's state for member satisfies ok
// ("" when there is none).
func (r *fleetRig) waitState(member string, ok func(string) bool) {
	r.t.Helper()
	require.EventuallyWithT(r.t, func(c *assert.CollectT) {
		src, err := r.mgmtKube.CoreV1().ConfigMaps(flApp).Get(r.t.Context(), "settings-0", metav1.GetOptions{})
		require.NoError(c, err)
		state := src.Annotations[flStatusPrefix+member]
		assert.True(c, ok(state), "state of %s: %q", member, state)
	}, waitTimeout, pollEvery)
}

// holder returns the replica whose metrics say it holds member.
func (r *fleetRig) holder(member string) string {
	r.t.Helper()
	var holder string
	require.EventuallyWithT(r.t, func(c *assert.CollectT) {
		holder = ""
		for id, p := range r.replicas {
			_, body, err := httpGet(r.t.Context(), p.metricsURL+"/metrics")
			require.NoError(c, err)
			if v, held := metricSum(body, "ctrlkit_cluster_ready", map[string]string{"cluster": member}); held && v == 1 {
				require.Empty(c, holder, "two replicas hold %s", member)
				holder = id
			}
		}
		require.NotEmpty(c, holder, "a replica holds %s", member)
	}, waitTimeout, pollEvery)
	return holder
}

// checkDisjointWriters checks, for each object of writes, that the windows
// of the replicas that wrote it (first to last write, by user agent) do
// not overlap.
func checkDisjointWriters(t *testing.T, cluster string, writes []audit.Event) {
	t.Helper()
	type window struct{ first, last time.Time }
	byObject := map[string]map[string]*window{}
	for _, e := range writes {
		obj := e.Namespace + "/" + e.Name
		if byObject[obj] == nil {
			byObject[obj] = map[string]*window{}
		}
		w := byObject[obj][e.UserAgent]
		if w == nil {
			w = &window{first: e.Time, last: e.Time}
			byObject[obj][e.UserAgent] = w
		}
		w.last = e.Time
	}
	require.NotEmpty(t, byObject, "writes to %s", cluster)
	for obj, windows := range byObject {
		var errs []error
		for a, wa := range windows {
			for b, wb := range windows {
				if a < b && !wa.last.Before(wb.first) && !wb.last.Before(wa.first) {
					errs = append(errs, fmt.Errorf("%s and %s both wrote %s in %s: %s..%s and %s..%s", a, b, obj, cluster,
						wa.first.Format(time.StampMilli), wa.last.Format(time.StampMilli), wb.first.Format(time.StampMilli), wb.last.Format(time.StampMilli)))
				}
			}
		}
		assert.NoError(t, errors.Join(errs...))
	}
}
