package controlplane_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/binaries"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
)

// crashPidFile, when set, makes the test binary start a control plane,
// write the component pids to the named file and crash without any cleanup.
const crashPidFile = "CTRLKIT_CONTROLPLANE_CRASH_PIDFILE"

// childReport, when set, makes the test binary start a control plane of
// size childSize, use it, stop it and write what it saw to the named file,
// like a test package of its own.
const (
	childReport = "CTRLKIT_CONTROLPLANE_CHILD_REPORT"
	childSize   = "CTRLKIT_CONTROLPLANE_CHILD_SIZE"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(crashPidFile); path != "" {
		crashWithControlPlane(path)
		return
	}
	if path := os.Getenv(childReport); path != "" {
		os.Exit(childControlPlane(path, os.Getenv(childSize)))
	}
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of client-go's shared transports.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	)
}

func crashWithControlPlane(pidFile string) {
	cp, err := controlplane.Start(context.Background(), controlplane.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	var b strings.Builder
	fmt.Fprintln(&b, cp.StateDir())
	for _, pid := range cp.Pids() {
		fmt.Fprintln(&b, pid)
	}
	if err := os.WriteFile(pidFile, []byte(b.String()), 0o644); err != nil {
		os.Exit(4)
	}
	// A panic on another goroutine kills the process at once: no deferred
	// call, no t.Cleanup, no Stop. This goroutine waits for it forever.
	go panic("simulated crash of a test binary")
	select {}
}

// childControlPlane is one side of TestParallelTestProcesses.
func childControlPlane(report, size string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var opts controlplane.Options
	if size == controlplane.Full.String() {
		opts.Size = controlplane.Full
	}
	cp, err := controlplane.Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer cp.Stop()
	cs, err := kubernetes.NewForConfig(cp.Config())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 4
	}
	// The same name in both: it only works if each has its own API.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "parallel"}}, metav1.CreateOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 5
	}
	var b strings.Builder
	fmt.Fprintln(&b, cp.Config().Host)
	fmt.Fprintln(&b, cp.StateDir())
	for _, pid := range cp.Pids() {
		fmt.Fprintln(&b, pid)
	}
	if err := os.WriteFile(report, []byte(b.String()), 0o644); err != nil {
		return 6
	}
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 7
	}
	return 0
}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.smoke.ctrlkit.dev
spec:
  group: smoke.ctrlkit.dev
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
`

// assertAllGone checks that no process the control plane started is left.
func assertAllGone(t *testing.T, pids map[string]int) {
	t.Helper()
	for name, pid := range pids {
		_, err := os.Stat(filepath.Join("/proc", itoa(pid)))
		assert.ErrorIs(t, err, os.ErrNotExist, "%s (pid %d) still exists after Stop", name, pid)
	}
}

func TestAPIServerOnly(t *testing.T) {
	crdDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(crdDir, "widgets.yaml"), []byte(widgetCRD), 0o644))
	gadgetFile := filepath.Join(t.TempDir(), "gadget-crd.yaml")
	require.NoError(t, os.WriteFile(gadgetFile, []byte(strings.NewReplacer("widget", "gadget", "Widget", "Gadget").Replace(widgetCRD)), 0o644))

	cp := controlplane.StartT(t, controlplane.Options{
		Size: controlplane.APIServerOnly,
		CRDs: []string{crdDir, gadgetFile},
		Users: []controlplane.User{
			{Name: "alice"},
			{Name: "bob", ClusterRoles: []string{"namespace-reader"}},
		},
	})
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(cp.Config())
	require.NoError(t, err)
	pids := cp.Pids()
	assert.Equal(t, []string{controlplane.Etcd, controlplane.KubeAPIServer}, sortedKeys(pids))
	assert.FileExists(t, cp.KubeconfigPath())

	t.Run("version is the pinned release", func(t *testing.T) {
		v, err := cs.Discovery().ServerVersion()
		require.NoError(t, err)
		assert.Equal(t, binaries.KubernetesVersion, v.GitVersion)
	})

	t.Run("admin creates a namespace and a ConfigMap, the audit log records it", func(t *testing.T) {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "smoke"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.CoreV1().ConfigMaps("smoke").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "settings"},
			Data:       map[string]string{"k": "v"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)

		events, err := cp.AuditEvents()
		require.NoError(t, err)
		creates := audit.Select(events, audit.ByUser(controlplane.AdminUser), audit.ByVerb("create"), audit.ByResource("", "configmaps"), audit.ByObject("smoke", "settings"))
		require.Len(t, creates, 1, "audit events: %v", creates)
		assert.Equal(t, 201, creates[0].Code)
		assert.Equal(t, "Metadata", creates[0].Level)
		assert.Equal(t, 1, audit.Count(events, audit.ByUser(controlplane.AdminUser), audit.ByVerb("create"), audit.ByResource("", "namespaces"), audit.ByObject("", "smoke"), audit.ByCode(201)))
	})

	t.Run("a static-token user has only what RBAC grants", func(t *testing.T) {
		cfg, err := cp.UserConfig("alice")
		require.NoError(t, err)
		alice, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "alice"}}

		_, err = alice.CoreV1().ConfigMaps("smoke").Create(ctx, cm, metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)

		// Not the aggregated "edit" ClusterRole: its rules are filled in by a
		// kube-controller-manager controller, which APIServerOnly lacks.
		_, err = cs.RbacV1().Roles("smoke").Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "configmap-writer"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.RbacV1().RoleBindings("smoke").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "alice-configmap-writer"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmap-writer"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := alice.CoreV1().ConfigMaps("smoke").Create(ctx, cm, metav1.CreateOptions{})
			assert.NoError(c, err)
		}, 10*time.Second, 50*time.Millisecond)

		events, err := cp.AuditEvents()
		require.NoError(t, err)
		aliceCreates := audit.Select(events, audit.ByUser("alice"), audit.ByVerb("create"))
		require.GreaterOrEqual(t, len(aliceCreates), 2)
		assert.Equal(t, 403, aliceCreates[0].Code)
		assert.Equal(t, 201, aliceCreates[len(aliceCreates)-1].Code)

		_, err = cp.UserConfig("nobody")
		assert.Error(t, err)
	})

	t.Run("a user's ClusterRoles are bound and take effect once the role exists", func(t *testing.T) {
		cfg, err := cp.UserConfig("bob")
		require.NoError(t, err)
		bob, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		_, err = bob.CoreV1().Namespaces().Get(ctx, "smoke", metav1.GetOptions{})
		require.True(t, apierrors.IsForbidden(err), "no role yet: want 403, got %v", err)

		_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "namespace-reader"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := bob.CoreV1().Namespaces().Get(ctx, "smoke", metav1.GetOptions{})
			assert.NoError(c, err)
		}, 10*time.Second, 50*time.Millisecond)
		_, err = bob.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "only get was granted: want 403, got %v", err)

		sa, err := cp.ServiceAccountConfig(ctx, "smoke", "reader", "namespace-reader")
		require.NoError(t, err)
		robot, err := kubernetes.NewForConfig(sa)
		require.NoError(t, err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := robot.CoreV1().Namespaces().Get(ctx, "smoke", metav1.GetOptions{})
			assert.NoError(c, err)
		}, 10*time.Second, 50*time.Millisecond)
	})

	t.Run("a ServiceAccount bound to a ClusterRole", func(t *testing.T) {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "foo-system"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		cfg, err := cp.ServiceAccountConfig(ctx, "foo-system", "foo-controller", "foo-controller")
		require.NoError(t, err)
		// run the controller with cfg, then:
		events, err := cp.AuditEvents()
		require.NoError(t, err)
		assert.Zero(t, audit.Count(events, audit.ByUser("system:serviceaccount:foo-system:foo-controller"), audit.ByCode(403)))

		binding, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "ctrlkit-testenv:serviceaccount:foo-system:foo-controller:foo-controller", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "foo-controller", binding.RoleRef.Name)
		assert.Equal(t, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "foo-system", Name: "foo-controller"}}, binding.Subjects)
		assert.NotEmpty(t, cfg.BearerToken)
	})

	t.Run("kubectl acts as the admin", func(t *testing.T) {
		out, err := cp.KubectlCommand(ctx, "get", "namespace", "smoke", "-o", "name").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Equal(t, "namespace/smoke\n", string(out))

		apply := cp.KubectlCommand(ctx, "apply", "-n", "smoke", "-f", "-")
		apply.Stdin = strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n")
		out, err = apply.CombinedOutput()
		require.NoError(t, err, "%s", out)
		_, err = cs.CoreV1().ConfigMaps("smoke").Get(ctx, "applied", metav1.GetOptions{})
		assert.NoError(t, err)
	})

	t.Run("a ServiceAccount token authenticates as the ServiceAccount", func(t *testing.T) {
		cfg, err := cp.ServiceAccountConfig(ctx, "smoke", "robot")
		require.NoError(t, err)
		robot, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		review, err := robot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, "system:serviceaccount:smoke:robot", review.Status.UserInfo.Username)

		// Asking again reuses the ServiceAccount.
		_, err = cp.ServiceAccountConfig(ctx, "smoke", "robot")
		require.NoError(t, err)
	})

	t.Run("installed CRDs are served and validated", func(t *testing.T) {
		dyn, err := dynamic.NewForConfig(cp.Config())
		require.NoError(t, err)
		widgets := dyn.Resource(schema.GroupVersionResource{Group: "smoke.ctrlkit.dev", Version: "v1", Resource: "widgets"}).Namespace("smoke")
		w := func(size int64) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "smoke.ctrlkit.dev/v1", "kind": "Widget",
				"metadata": map[string]any{"generateName": "w-"},
				"spec":     map[string]any{"size": size},
			}}
		}
		_, err = widgets.Create(ctx, w(3), metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = widgets.Create(ctx, w(0), metav1.CreateOptions{})
		assert.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)

		// The CRD given as a file is served too.
		gadgets := dyn.Resource(schema.GroupVersionResource{Group: "smoke.ctrlkit.dev", Version: "v1", Resource: "gadgets"}).Namespace("smoke")
		_, err = gadgets.List(ctx, metav1.ListOptions{})
		assert.NoError(t, err)

		// Installing again updates in place.
		require.NoError(t, cp.InstallCRDs(ctx, crdDir))
	})

	require.NoError(t, cp.Stop())
	assertAllGone(t, pids)
}

func TestFull(t *testing.T) {
	cp := controlplane.StartT(t, controlplane.Options{Size: controlplane.Full})
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(cp.Config())
	require.NoError(t, err)
	pids := cp.Pids()
	assert.Len(t, pids, 5)

	node, err := cs.CoreV1().Nodes().Get(ctx, controlplane.NodeName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(controlplane.NodePodCapacity), node.Status.Allocatable.Pods().Value())

	const ns, name, replicas = "smoke", "web", 3
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": name}
	_, err = cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, int32(replicas), d.Status.AvailableReplicas)
	}, 60*time.Second, 100*time.Millisecond, "Deployment never became available")

	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pods.Items, replicas)
	for _, p := range pods.Items {
		assert.Equal(t, controlplane.NodeName, p.Spec.NodeName)
		assert.Equal(t, corev1.PodRunning, p.Status.Phase)
	}
	rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, rss.Items, 1)

	require.NoError(t, cs.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		require.NoError(c, err)
		assert.Empty(c, rss.Items, "ReplicaSets left")
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		require.NoError(c, err)
		assert.Empty(c, pods.Items, "Pods left")
	}, 60*time.Second, 100*time.Millisecond, "garbage collection did not remove the ReplicaSet and its pods")

	// Each controller acts as its own ServiceAccount, so the audit log tells
	// them apart.
	events, err := cp.AuditEvents()
	require.NoError(t, err)
	inNS := []audit.Filter{audit.ByNamespace(ns), audit.Succeeded()}
	assert.Equal(t, 1, audit.Count(events, append(inNS, audit.ByUser("system:serviceaccount:kube-system:deployment-controller"), audit.ByVerb("create"), audit.ByResource("apps", "replicasets"))...))
	assert.Equal(t, replicas, audit.Count(events, append(inNS, audit.ByUser("system:serviceaccount:kube-system:replicaset-controller"), audit.ByVerb("create"), audit.ByResource("", "pods"))...))
	assert.Equal(t, 1, audit.Count(events, append(inNS, audit.ByUser("system:serviceaccount:kube-system:generic-garbage-collector"), audit.ByVerb("delete"), audit.ByResource("apps", "replicasets"))...))

	require.NoError(t, cp.Stop())
	assertAllGone(t, pids)
}

// Even a test binary that dies without running any cleanup leaves no
// component behind: each is tied to it with a parent-death signal.
func TestNoOrphansWhenTestBinaryCrashes(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	pidFile := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), crashPidFile+"="+pidFile)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the child must crash")
	require.Contains(t, string(out), "simulated crash", "child output:\n%s", out)

	data, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	lines := strings.Fields(string(data))
	require.Len(t, lines, 3, "state dir and two pids")
	stateDir, pids := lines[0], lines[1:]
	t.Cleanup(func() { _ = os.RemoveAll(stateDir) })
	for _, p := range pids {
		pid, err := strconv.Atoi(p)
		require.NoError(t, err)
		assert.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 20*time.Millisecond, "pid %d outlived the crashed test binary", pid)
	}
}

// Two test processes (as go test runs two packages) start control planes at
// the same moment with the same binary cache: each gets its own ports and
// state directory, and each leaves nothing behind.
func TestParallelTestProcesses(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	sizes := []controlplane.Size{controlplane.APIServerOnly, controlplane.Full}
	reports := make([]string, len(sizes))
	cmds := make([]*exec.Cmd, len(sizes))
	outputs := make([]*strings.Builder, len(sizes))
	for i, size := range sizes {
		reports[i] = filepath.Join(t.TempDir(), "report")
		outputs[i] = &strings.Builder{}
		cmds[i] = exec.Command(exe, "-test.run=^$")
		cmds[i].Env = append(os.Environ(), childReport+"="+reports[i], childSize+"="+size.String())
		cmds[i].Stdout, cmds[i].Stderr = outputs[i], outputs[i]
		require.NoError(t, cmds[i].Start())
		t.Cleanup(func() { _ = cmds[i].Process.Kill() })
	}
	hosts, dirs := map[string]bool{}, map[string]bool{}
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "%s child: %s", sizes[i], outputs[i])
		data, err := os.ReadFile(reports[i])
		require.NoError(t, err)
		lines := strings.Fields(string(data))
		require.GreaterOrEqual(t, len(lines), 4, "host, state dir, pids")
		hosts[lines[0]], dirs[lines[1]] = true, true
		assert.NoDirExists(t, lines[1], "the state directory is removed")
		for _, p := range lines[2:] {
			pid, err := strconv.Atoi(p)
			require.NoError(t, err)
			assert.False(t, alive(pid), "pid %d of the %s child is left", pid, sizes[i])
		}
	}
	assert.Len(t, hosts, 2, "two API servers")
	assert.Len(t, dirs, 2, "two state directories")
}

// alive reports whether pid runs; a zombie (ended, waiting to be reaped by
// init) does not count.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// A component that cannot start makes Start fail fast, with its log in the
// error, and leaves nothing running.
func TestStartFailureStopsEverything(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	start := time.Now()
	_, err := controlplane.Start(t.Context(), controlplane.Options{
		StateDir:  stateDir,
		ExtraArgs: map[string][]string{controlplane.KubeAPIServer: {"--no-such-flag"}},
	})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Contains(t, err.Error(), "kube-apiserver exited")
	assert.Contains(t, err.Error(), "unknown flag: --no-such-flag", "the log tail is in the error")
	assert.Contains(t, err.Error(), stateDir)

	// etcd was running; it must be gone. Its pid is in no API, so look for
	// any process still using the state directory.
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	for _, p := range procs {
		cmdline, _ := os.ReadFile(p)
		assert.NotContains(t, string(cmdline), stateDir, "%s still runs", p)
	}

	_, err = controlplane.Start(t.Context(), controlplane.Options{StateDir: stateDir})
	assert.ErrorContains(t, err, "not empty", "a used state dir is refused")
}

// A start without binaries names what is missing: an API-server-only
// control plane needs etcd, kube-apiserver and kubectl, a full one every
// artifact.
func TestStartFailsClearlyWithoutBinaries(t *testing.T) {
	tests := []struct {
		size        controlplane.Size
		wantMissing int
	}{
		{size: controlplane.APIServerOnly, wantMissing: len(binaries.APIServerOnly)},
		{size: controlplane.Full, wantMissing: len(binaries.Artifacts())},
	}
	for _, tt := range tests {
		t.Run(tt.size.String(), func(t *testing.T) {
			_, err := controlplane.Start(context.Background(), controlplane.Options{Size: tt.size, Binaries: binaries.Options{Dir: t.TempDir()}})
			var missing *binaries.MissingError
			require.ErrorAs(t, err, &missing)
			assert.Len(t, missing.Missing, tt.wantMissing)
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func sortedKeys(m map[string]int) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.Sort(keys)
	return keys
}
