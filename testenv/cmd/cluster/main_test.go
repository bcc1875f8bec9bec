package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
)

// runAsCommand makes the test binary behave as the cluster command, so the
// test exercises the real detach and stop paths (up re-executes itself).
const runAsCommand = "CTRLKIT_CLUSTER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsCommand) == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	)
}

// cluster runs the command with args and returns stdout, stderr and
// whether it succeeded.
func cluster(t *testing.T, args ...string) (string, string, bool) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), runAsCommand+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return strings.TrimSpace(stdout.String()), stderr.String(), err == nil
}

// gone reports whether pid no longer runs. A zombie counts as gone: the
// process has ended and only waits for its parent (possibly init) to reap
// it.
func gone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

func TestUpStatusDown(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() { cluster(t, "down", "--dir", dir) })

	kubeconfig, stderr, ok := cluster(t, "up", "--dir", dir)
	require.True(t, ok, "up failed: %s", stderr)
	assert.Equal(t, filepath.Join(dir, cpDir, "kubeconfig"), kubeconfig)
	assert.Contains(t, stderr, "export KUBECONFIG="+kubeconfig)
	t.Run("the printed kubectl command works", func(t *testing.T) {
		_, try, found := strings.Cut(stderr, "try: ")
		require.True(t, found, "no command printed: %s", stderr)
		try, _, _ = strings.Cut(try, "\n")
		args := strings.Fields(try)
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		require.NoError(t, err, "%s: %s", try, out)
		assert.Contains(t, string(out), "No resources found")
	})

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	node, err := cs.CoreV1().Nodes().Get(t.Context(), controlplane.NodeName, metav1.GetOptions{})
	require.NoError(t, err)
	var ready corev1.ConditionStatus
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status
		}
	}
	assert.Equal(t, corev1.ConditionTrue, ready)

	servePid, ok := running(dir)
	require.True(t, ok)
	pids := componentPids(dir)
	assert.Len(t, pids, 5)

	out, _, ok := cluster(t, "status", "--dir", dir)
	assert.True(t, ok)
	assert.Equal(t, kubeconfig, out)

	out, stderr, ok = cluster(t, "up", "--dir", dir)
	assert.True(t, ok)
	assert.Equal(t, kubeconfig, out, "a second up reuses the running cluster")
	assert.Contains(t, stderr, "already running")

	_, stderr, ok = cluster(t, "down", "--dir", dir)
	require.True(t, ok, "down failed: %s", stderr)
	assert.True(t, gone(servePid), "serve process %d left", servePid)
	for name, pid := range pids {
		assert.True(t, gone(pid), "%s (pid %d) left", name, pid)
	}

	_, _, ok = cluster(t, "status", "--dir", dir)
	assert.False(t, ok, "status after down")
	_, stderr, ok = cluster(t, "down", "--dir", dir)
	assert.True(t, ok, "down is idempotent: %s", stderr)
}

func TestUsage(t *testing.T) {
	_, stderr, ok := cluster(t, "sideways")
	assert.False(t, ok)
	assert.Contains(t, stderr, "usage: cluster up|down|status")
}
