package kubeconfig_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/internal/memberstest"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
)

// A Secret refused again for the same reason (its metadata changed, the
// informer relisted) is not refused again: no second refusal, event or
// log line. A new reason is reported.
func TestUnchangedRefusalIsReportedOnce(t *testing.T) {
	ctx := context.Background()
	unsafe := kubeconfigWith("https://evil:6443", "", "exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never}")
	client := fake.NewClientset(secret("evil", true, unsafe))
	p, err := kubeconfig.New(kubeconfig.Config{Client: client, Namespace: "fleet"})
	require.NoError(t, err)
	m := &memberstest.Recorder{Describe: func(cfg *rest.Config) string { return cfg.Host }}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx, m) }()
	defer func() {
		cancel()
		assert.NoError(t, <-done)
	}()
	require.Eventually(t, func() bool { return slices.Contains(m.Calls(), "synced") }, waitFor, time.Millisecond)
	// seen waits for a marker Secret's member: the informer delivers
	// the events of one namespace in order, so the update before it has
	// been handled.
	seen := func(marker string) {
		t.Helper()
		_, err := client.CoreV1().Secrets("fleet").Create(ctx, secret(marker, true, kubeconfigFor("https://"+marker+":6443", "t")), metav1.CreateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return slices.Contains(m.Calls(), "set "+marker+" https://"+marker+":6443") }, waitFor, time.Millisecond)
	}
	refusals := func() []string {
		return slices.DeleteFunc(m.Calls(), func(c string) bool { return !strings.HasPrefix(c, "refuse evil: ") })
	}

	s := secret("evil", true, unsafe)
	s.Annotations = map[string]string{"touched": "yes"}
	_, err = client.CoreV1().Secrets("fleet").Update(ctx, s, metav1.UpdateOptions{})
	require.NoError(t, err)
	seen("marker1")
	assert.Equal(t, []string{`refuse evil: user "u": exec plugin "sh": not allowed`}, refusals(), "the unchanged refusal was reported again")

	// The same reason in another kubeconfig is the same refusal.
	_, err = client.CoreV1().Secrets("fleet").Update(ctx, secret("evil", true, kubeconfigWith("https://evil2:6443", "", "exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never}")), metav1.UpdateOptions{})
	require.NoError(t, err)
	seen("marker2")
	assert.Len(t, refusals(), 1, "the same refusal was reported again")

	// Another reason is reported.
	_, err = client.CoreV1().Secrets("fleet").Update(ctx, secret("evil", true, kubeconfigWith("https://evil:6443", "insecure-skip-tls-verify: true", "")), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(refusals()) == 2 }, waitFor, time.Millisecond)
	assert.Equal(t, `refuse evil: cluster "c": insecure-skip-tls-verify: not allowed`, refusals()[1])
}
