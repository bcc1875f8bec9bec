package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

// absentWindow is how long the test watches the requests of the summary
// operator while the Foo CRD is absent: a measurement window, not a wait
// for anything.
const absentWindow = 5 * time.Second

// watchErrorLine matches the lines client-go logs for a failed list or
// watch.
var watchErrorLine = regexp.MustCompile(`(?i)failed to (list|watch)`)

// TestSummaryFollowsTheFooCRD runs examples/summary on a real control
// plane, as a static-token user with the example's roles, without the Foo
// CRD: it turns ready; the CRD is installed and its Foos are summarized;
// the CRD is deleted while Foos are reconciled, and installed again, and
// new Foos are summarized. The operator never restarts, never logs a
// watch-error loop, counts the stop in its metrics, and the audit log
// shows that while the CRD is absent it sends no request for Foos and
// next to no request at all (its watches stay open).
func TestSummaryFollowsTheFooCRD(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	root, err := repo.Root()
	require.NoError(t, err)
	waitBinary := buildInBackground(t, root, "summary", true)
	const user, ns = "summary", "shop"
	cp := controlplane.StartT(t, controlplane.Options{Size: controlplane.Full, Users: []controlplane.User{{Name: user}}})
	bin := waitBinary()
	ctx := t.Context()
	admin := cp.Config()
	admin.QPS, admin.Burst = 1000, 1000
	kube, err := kubernetes.NewForConfig(admin)
	require.NoError(t, err)
	crds, err := apiextensionsclientset.NewForConfig(admin)
	require.NoError(t, err)
	foos, err := fooclientset.NewForConfig(admin)
	require.NoError(t, err)

	// The example's namespace and roles, bound to the user.
	deploy := filepath.Join(root, "examples", "summary", "deploy")
	for _, file := range []string{"namespace.yaml", "role.yaml", "rbac.yaml"} {
		objs, err := controlplane.ReadObjects(filepath.Join(deploy, file))
		require.NoError(t, err)
		for _, obj := range objs {
			switch b := obj.(type) {
			case *rbacv1.RoleBinding:
				b.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
			case *rbacv1.ClusterRoleBinding:
				b.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
			}
		}
		require.NoError(t, controlplane.CreateObjects(ctx, kube, objs...))
	}
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg, err := cp.UserConfig(user)
	require.NoError(t, err)
	userCRDs, err := apiextensionsclientset.NewForConfig(cfg)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := userCRDs.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{Limit: 1})
		assert.NoError(c, err)
	}, waitTimeout, relPoll, "RBAC lets %s list CRDs", user)
	kubeconfig := filepath.Join(t.TempDir(), user+".kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(kubeconfig, cfg, user))

	metricsAddr, healthAddr := freeAddress(t), freeAddress(t)
	p := startProcess(t, user, bin, "--kubeconfig="+kubeconfig,
		"--metrics-bind-address="+metricsAddr, "--health-probe-bind-address="+healthAddr, "-v=2")
	p.metricsURL, p.healthURL = "http://"+metricsAddr, "http://"+healthAddr
	const resource = "foos.samplecontroller.k8s.io/v1alpha1"
	waitState := func(state string) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			require.False(c, p.exited(), "the operator exited")
			code, body, err := httpGet(ctx, p.metricsURL+"/metrics")
			require.NoError(c, err)
			require.Equal(c, 200, code)
			v, found := metricSum(body, "ctrlkit_api_watch_state", map[string]string{"resource": resource, "state": state})
			assert.True(c, found && v == 1, "ctrlkit_api_watch_state{state=%q} is %v", state, v)
		}, waitTimeout, relPoll, "the watch of Foos is %s", state)
	}

	// Without the CRD: ready, waiting, and quiet.
	relWaitReadyz(t, p)
	waitState("waiting")
	quiet1 := window(absentWindow)

	// Installed after the operator started: the Foos are summarized.
	require.NoError(t, cp.InstallCRDs(ctx, filepath.Join(root, "foo", "crd")))
	createFoos := func(prefix string, n int) []string {
		var names []string
		for i := range n {
			name := fmt.Sprintf("%s-%d", prefix, i)
			_, err := foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, &samplev1alpha1.Foo{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       samplev1alpha1.FooSpec{DeploymentName: name, Replicas: ptr.To[int32](1)},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			names = append(names, name)
		}
		return names
	}
	waitSummaries := func(names []string) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			for _, name := range names {
				cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name+"-summary", metav1.GetOptions{})
				require.NoError(c, err)
				assert.Equal(c, name, cm.Data["deploymentName"])
			}
		}, waitTimeout, relPoll, "summaries of %d Foos", len(names))
	}
	waitSummaries(createFoos("first", 10))
	waitState("running")

	// Deleted while Foos are reconciled: a burst of new Foos, then the
	// CRD's deletion at once.
	createFoos("burst", 30)
	crdName := "foos.samplecontroller.k8s.io"
	require.NoError(t, crds.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crdName, metav1.DeleteOptions{}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "the CRD is still there: %v", err)
	}, waitTimeout, relPoll, "the CRD's deletion ends")
	waitState("stopped")
	quiet2 := window(absentWindow)

	// Installed again: new Foos are summarized by the same process.
	require.NoError(t, cp.InstallCRDs(ctx, filepath.Join(root, "foo", "crd")))
	waitSummaries(createFoos("again", 5))
	waitState("running")
	require.False(t, p.exited(), "the operator exited")

	_, metricsBody, err := httpGet(ctx, p.metricsURL+"/metrics")
	require.NoError(t, err)
	stops, _ := metricSum(metricsBody, "ctrlkit_api_watch_stops_total", map[string]string{"resource": resource})
	assert.Equal(t, 1.0, stops, "ctrlkit_api_watch_stops_total")
	out := p.out.String()
	assert.Equal(t, 2, strings.Count(out, "Resource served: starting its watch"), "the watch started twice")
	assert.Equal(t, 1, strings.Count(out, "Resource no longer served: its watch stopped"), "the watch stopped once")
	var watchErrors []string
	for _, line := range strings.Split(out, "\n") {
		if watchErrorLine.MatchString(line) {
			watchErrors = append(watchErrors, line)
		}
	}
	assert.LessOrEqual(t, len(watchErrors), 2, "watch errors logged (a loop?):\n%s", strings.Join(watchErrors, "\n"))

	// The audit log: while the CRD was absent, no request for Foos, and
	// next to none at all.
	events, err := cp.AuditEvents()
	require.NoError(t, err)
	for i, w := range []timeWindow{quiet1, quiet2} {
		in := audit.Select(events, audit.ByUser(user), func(e audit.Event) bool { return !e.Time.Before(w.from) && !e.Time.After(w.to) })
		requests := map[string]audit.Event{}
		for _, e := range in {
			requests[e.AuditID] = e
		}
		var lines []string
		fooRequests := 0
		for _, e := range requests {
			lines = append(lines, e.String())
			if e.APIGroup == samplev1alpha1.SchemeGroupVersion.Group {
				fooRequests++
			}
		}
		t.Logf("requests of the operator in %s without the CRD (window %d): %d: %s", absentWindow, i+1, len(requests), strings.Join(lines, "; "))
		assert.Zero(t, fooRequests, "requests for Foos while the CRD was absent (window %d)", i+1)
		assert.LessOrEqual(t, len(requests), 4, "requests while the CRD was absent (window %d): %s", i+1, strings.Join(lines, "; "))
	}

	relTerminate(t, p, 20*time.Second)
	relAssertNoDataRace(t, p)
	t.Logf("done after %s", time.Since(begin).Round(time.Millisecond))
}

// timeWindow is a span of time of the audit log.
type timeWindow struct{ from, to time.Time }

// window returns the span of the next d, once it has passed.
func window(d time.Duration) timeWindow {
	from := time.Now()
	<-time.After(d)
	return timeWindow{from: from, to: time.Now()}
}
