package kubeconfig_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/internal/memberstest"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitFor = 30 * time.Second

func kubeconfigFor(host, token string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
users:
- name: u
  user:
    token: %s
contexts:
- name: c
  context:
    cluster: c
    user: u
current-context: c
`, host, token)
}

func secret(name string, labelled bool, data []byte) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name}, Data: map[string][]byte{kubeconfig.DataKey: data}}
	if labelled {
		s.Labels = map[string]string{kubeconfig.Label: ""}
	}
	return s
}

func TestProvider(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(
		secret("east", true, kubeconfigFor("https://east:6443", "t1")),
		secret("unlabelled", false, kubeconfigFor("https://other:6443", "t1")),
	)
	p, err := kubeconfig.New(kubeconfig.Config{Client: client, Namespace: "fleet"})
	require.NoError(t, err)
	m := &memberstest.Recorder{Describe: func(cfg *rest.Config) string { return cfg.Host + " " + cfg.BearerToken }}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx, m) }()
	defer func() {
		cancel()
		assert.NoError(t, <-done)
	}()
	require.Eventually(t, func() bool { return slices.Contains(m.Calls(), "synced") }, waitFor, time.Millisecond)
	assert.Equal(t, []string{"set east https://east:6443 t1", "synced"}, m.Calls(), "the labelled Secret is reported before Synced")

	steps := []struct {
		name string
		do   func() error
		want string // the next call reported
	}{
		{name: "a new member", want: "set west https://west:6443 t1", do: func() error {
			_, err := client.CoreV1().Secrets("fleet").Create(ctx, secret("west", true, kubeconfigFor("https://west:6443", "t1")), metav1.CreateOptions{})
			return err
		}},
		{name: "rotated credentials", want: "set east https://east:6443 t2", do: func() error {
			_, err := client.CoreV1().Secrets("fleet").Update(ctx, secret("east", true, kubeconfigFor("https://east:6443", "t2")), metav1.UpdateOptions{})
			return err
		}},
		{name: "an unreadable kubeconfig removes the member", want: "refuse west: cannot read the kubeconfig: not YAML or JSON: line 1: did not find expected ',' or ']'", do: func() error {
			_, err := client.CoreV1().Secrets("fleet").Update(ctx, secret("west", true, []byte("not: [a kubeconfig")), metav1.UpdateOptions{})
			return err
		}},
		{name: "a Secret losing its label removes the member", want: "delete east", do: func() error {
			// An unchanged kubeconfig in an otherwise changed Secret reports nothing first.
			s := secret("east", true, kubeconfigFor("https://east:6443", "t2"))
			s.Annotations = map[string]string{"touched": "yes"}
			if _, err := client.CoreV1().Secrets("fleet").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
				return err
			}
			_, err := client.CoreV1().Secrets("fleet").Update(ctx, secret("east", false, kubeconfigFor("https://east:6443", "t2")), metav1.UpdateOptions{})
			return err
		}},
		{name: "a deleted Secret removes the member", want: "delete fixed", do: func() error {
			if _, err := client.CoreV1().Secrets("fleet").Create(ctx, secret("fixed", true, kubeconfigFor("https://fixed:6443", "t1")), metav1.CreateOptions{}); err != nil {
				return err
			}
			return client.CoreV1().Secrets("fleet").Delete(ctx, "fixed", metav1.DeleteOptions{})
		}},
	}
	for _, step := range steps {
		before := len(m.Calls())
		require.NoError(t, step.do(), step.name)
		require.Eventually(t, func() bool { return slices.Contains(m.Calls()[before:], step.want) }, waitFor, time.Millisecond, step.name)
		if step.name == "a Secret losing its label removes the member" {
			assert.Equal(t, []string{"delete east"}, m.Calls()[before:], "the annotation alone reported something")
		}
	}
	// The unreadable kubeconfig is a Warning event on its Secret.
	require.Eventually(t, func() bool {
		evs, err := client.CoreV1().Events("fleet").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, e := range evs.Items {
			if e.Reason == kubeconfig.ReasonInvalidKubeconfig && e.InvolvedObject.Name == "west" && e.Type == corev1.EventTypeWarning {
				return true
			}
		}
		return false
	}, waitFor, 10*time.Millisecond)
}

func TestNewValidation(t *testing.T) {
	_, err := kubeconfig.New(kubeconfig.Config{})
	assert.EqualError(t, err, "kubeconfig: client is nil\nnamespace is empty")
}
