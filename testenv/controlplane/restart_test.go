package controlplane_test

import (
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
)

func TestRestartAPIServer(t *testing.T) {
	cp := controlplane.StartT(t, controlplane.Options{Size: controlplane.APIServerOnly})
	ctx := t.Context()
	cfg := cp.Config()
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "before"},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	before := cp.Pids()

	require.NoError(t, cp.Kill(controlplane.KubeAPIServer))
	_, err = cs.CoreV1().ConfigMaps("default").Get(ctx, "before", metav1.GetOptions{})
	require.Error(t, err, "the API server is down")
	_, statErr := os.Stat("/proc/" + itoa(before[controlplane.KubeAPIServer]))
	assert.ErrorIs(t, statErr, os.ErrNotExist, "the killed process is gone")
	require.NoError(t, cp.Kill(controlplane.KubeAPIServer), "killing a dead component is fine")

	require.NoError(t, cp.Restart(ctx, controlplane.KubeAPIServer))
	after := cp.Pids()
	assert.NotEqual(t, before[controlplane.KubeAPIServer], after[controlplane.KubeAPIServer], "a new process")
	assert.Equal(t, before[controlplane.Etcd], after[controlplane.Etcd], "etcd kept running")
	assert.Equal(t, cfg.Host, cp.Config().Host, "same address")

	// The old client, with the old CA and token, reads the old data and
	// writes new data.
	cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "before", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v", cm.Data["k"])
	_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// One audit log across both servers.
	events, err := cp.AuditEvents()
	require.NoError(t, err)
	for _, name := range []string{"before", "after"} {
		assert.Equal(t, 1, audit.Count(events, audit.ByVerb("create"), audit.ByResource("", "configmaps"), audit.ByObject("default", name), audit.ByCode(201)), name)
	}

	downtime, err := cp.RestartAPIServer(ctx)
	require.NoError(t, err)
	assert.Positive(t, downtime)
	t.Logf("kill -9 and restart of kube-apiserver: unavailable for %s", downtime.Round(time.Millisecond))
	_, err = cs.CoreV1().ConfigMaps("default").Get(ctx, "after", metav1.GetOptions{})
	require.NoError(t, err)

	u, err := url.Parse(cfg.Host)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", u.Hostname())
	assert.Error(t, cp.Restart(ctx, "no-such-component"))

	require.NoError(t, cp.Stop())
	assert.Error(t, cp.Restart(ctx, controlplane.KubeAPIServer), "nothing starts after Stop")
	assertAllGone(t, cp.Pids())
}
