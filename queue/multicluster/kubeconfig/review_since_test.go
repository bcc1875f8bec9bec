package kubeconfig_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
)

// Status.Since is "when Ready or Err last changed". A Secret refused for
// the same kubeconfig, whose metadata alone changes (an annotation, a
// relist of the informer), is refused again with the same reason: Since
// must stay when the refusal started.
func TestReviewRefusedMemberSinceStaysWhileTheRefusalIsTheSame(t *testing.T) {
	ctx := context.Background()
	unsafe := kubeconfigWith("https://evil:6443", "", "exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never}")
	client := fake.NewClientset(secret("evil", true, unsafe))
	p, err := kubeconfig.New(kubeconfig.Config{Client: client, Namespace: "fleet"})
	require.NoError(t, err)
	fleet, err := multicluster.New("test", p, func(context.Context, *multicluster.Cluster) (int, error) { return 0, nil },
		multicluster.WithClients(func(context.Context, string, *rest.Config) (kubernetes.Interface, error) {
			return fake.NewClientset(), nil
		}))
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fleet.Run(runCtx) }()
	defer func() {
		cancel()
		assert.NoError(t, <-done)
	}()
	require.Eventually(t, func() bool { _, ok := fleet.Status("evil"); return ok }, waitFor, time.Millisecond)
	first, _ := fleet.Status("evil")

	time.Sleep(20 * time.Millisecond)
	s := secret("evil", true, unsafe)
	s.Annotations = map[string]string{"touched": "yes"}
	_, err = client.CoreV1().Secrets("fleet").Update(ctx, s, metav1.UpdateOptions{})
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // the provider has seen the update
	again, ok := fleet.Status("evil")
	require.True(t, ok)
	assert.Equal(t, first.Err.Error(), again.Err.Error(), "the same refusal")
	assert.True(t, again.Since.Equal(first.Since),
		"Since moved from %s to %s although neither Ready nor Err changed", first.Since.Format(time.StampMicro), again.Since.Format(time.StampMicro))
}
