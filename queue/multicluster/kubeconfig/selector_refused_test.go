package kubeconfig_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/internal/memberstest"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
)

// secretWithLabels is a Secret of namespace "fleet" with the given labels and
// data.
func secretWithLabels(name string, lbls map[string]string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name, Labels: lbls}, Data: data}
}

// runSelectedSecrets runs a Provider of cfg over client (the Secrets of
// namespace "fleet") until the test ends, and returns it once it synced,
// with what it reported.
func runSelectedSecrets(t *testing.T, client kubernetes.Interface, cfg kubeconfig.Config) (*kubeconfig.Provider, *memberstest.Recorder) {
	t.Helper()
	cfg.Client, cfg.Namespace = client, "fleet"
	p, err := kubeconfig.New(cfg)
	require.NoError(t, err)
	m := &memberstest.Recorder{Describe: func(cfg *rest.Config) string { return cfg.Host }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, m) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	require.Eventually(t, func() bool { return slices.Contains(m.Calls(), "synced") }, waitFor, time.Millisecond)
	return p, m
}

// The Secrets that are members are chosen by a label selector, and the
// kubeconfig is read from a data key, both configurable; the defaults are
// the label Label (any value) and the key DataKey.
func TestProviderSelectorAndDataKey(t *testing.T) {
	const mcrLabel = "sigs.k8s.io/multicluster-runtime-kubeconfig"
	tests := []struct {
		name    string
		cfg     kubeconfig.Config
		secrets []*corev1.Secret
		want    []string
	}{
		{
			name: "defaults",
			secrets: []*corev1.Secret{
				secretWithLabels("labelled", map[string]string{kubeconfig.Label: "any"}, map[string][]byte{kubeconfig.DataKey: kubeconfigFor("https://labelled:6443", "t")}),
				secretWithLabels("unlabelled", nil, map[string][]byte{kubeconfig.DataKey: kubeconfigFor("https://unlabelled:6443", "t")}),
				secretWithLabels("other-label", map[string]string{mcrLabel: "true"}, map[string][]byte{kubeconfig.DataKey: kubeconfigFor("https://other:6443", "t")}),
			},
			want: []string{"set labelled https://labelled:6443"},
		},
		{
			name: "a selector and a key of one's own",
			cfg:  kubeconfig.Config{Selector: labels.SelectorFromSet(labels.Set{mcrLabel: "true"}), DataKey: "config"},
			secrets: []*corev1.Secret{
				secretWithLabels("selected", map[string]string{mcrLabel: "true"}, map[string][]byte{"config": kubeconfigFor("https://selected:6443", "t")}),
				secretWithLabels("false", map[string]string{mcrLabel: "false"}, map[string][]byte{"config": kubeconfigFor("https://false:6443", "t")}),
				secretWithLabels("default-label", map[string]string{kubeconfig.Label: ""}, map[string][]byte{"config": kubeconfigFor("https://default:6443", "t")}),
			},
			want: []string{"set selected https://selected:6443"},
		},
		{
			name: "every Secret of the namespace",
			cfg:  kubeconfig.Config{Selector: labels.Everything()},
			secrets: []*corev1.Secret{
				secretWithLabels("a", nil, map[string][]byte{kubeconfig.DataKey: kubeconfigFor("https://a:6443", "t")}),
				secretWithLabels("b", map[string]string{"x": "y"}, map[string][]byte{kubeconfig.DataKey: kubeconfigFor("https://b:6443", "t")}),
			},
			want: []string{"set a https://a:6443", "set b https://b:6443"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := make([]runtime.Object, 0, len(tt.secrets))
			for _, s := range tt.secrets {
				objs = append(objs, s)
			}
			_, m := runSelectedSecrets(t, fake.NewClientset(objs...), tt.cfg)
			assert.ElementsMatch(t, tt.want, slices.DeleteFunc(m.Calls(), func(c string) bool { return c == "synced" }))
		})
	}

	// A Secret that comes to match the selector joins; one that stops
	// matching it leaves.
	ctx := context.Background()
	client := fake.NewClientset(secretWithLabels("east", map[string]string{mcrLabel: "true"}, map[string][]byte{"config": kubeconfigFor("https://east:6443", "t")}))
	_, m := runSelectedSecrets(t, client, kubeconfig.Config{Selector: labels.SelectorFromSet(labels.Set{mcrLabel: "true"}), DataKey: "config"})
	_, err := client.CoreV1().Secrets("fleet").Create(ctx, secretWithLabels("west", map[string]string{mcrLabel: "false"}, map[string][]byte{"config": kubeconfigFor("https://west:6443", "t")}), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().Secrets("fleet").Update(ctx, secretWithLabels("west", map[string]string{mcrLabel: "true"}, map[string][]byte{"config": kubeconfigFor("https://west:6443", "t")}), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return slices.Contains(m.Calls(), "set west https://west:6443") }, waitFor, time.Millisecond)
	_, err = client.CoreV1().Secrets("fleet").Update(ctx, secretWithLabels("east", map[string]string{mcrLabel: "false"}, map[string][]byte{"config": kubeconfigFor("https://east:6443", "t")}), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return slices.Contains(m.Calls(), "delete east") }, waitFor, time.Millisecond)
}

func TestNewValidatesSelectorAndKey(t *testing.T) {
	client := fake.NewClientset()
	_, err := kubeconfig.New(kubeconfig.Config{Client: client, Namespace: "fleet", DataKey: "not a key!"})
	assert.ErrorContains(t, err, `data key "not a key!"`)
	_, err = kubeconfig.New(kubeconfig.Config{Client: client, Namespace: "fleet", Selector: labels.Nothing()})
	assert.ErrorContains(t, err, "selector selects nothing")
}

// A Secret that cannot be a member (no kubeconfig under the data key, one
// that cannot be read, one that is not allowed) is reported with a reason:
// a Warning event on the Secret, the Fleet's Status of the member, and
// Provider.Refused; the other members go on.
func TestUnusableSecretsAreReported(t *testing.T) {
	execUser := "exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never}"
	secrets := []*corev1.Secret{
		secret("good", true, kubeconfigFor("https://good:6443", "t")),
		secretWithLabels("no-key", map[string]string{kubeconfig.Label: ""}, map[string][]byte{"value": kubeconfigFor("https://no-key:6443", "t")}),
		secret("unreadable", true, []byte("not: [a kubeconfig")),
		secret("not-allowed", true, kubeconfigWith("https://not-allowed:6443", "", execUser)),
	}
	want := map[string]struct{ reason, err, event string }{
		"no-key": {kubeconfig.ReasonInvalidKubeconfig, `the Secret has no data key "kubeconfig"`,
			`Cluster no-key is not a member: the Secret has no data key "kubeconfig"`},
		"unreadable": {kubeconfig.ReasonInvalidKubeconfig, "cannot read the kubeconfig: not YAML or JSON: line 1: did not find expected ',' or ']'",
			`Cluster unreadable is not a member: data key "kubeconfig": cannot read the kubeconfig: not YAML or JSON: line 1: did not find expected ',' or ']'`},
		"not-allowed": {kubeconfig.ReasonNotAllowed, `user "u": exec plugin "sh": not allowed`,
			`Cluster not-allowed is not a member: data key "kubeconfig": user "u": exec plugin "sh": not allowed`},
	}
	client := fake.NewClientset(secrets[0], secrets[1], secrets[2], secrets[3])
	p, err := kubeconfig.New(kubeconfig.Config{Client: client, Namespace: "fleet"})
	require.NoError(t, err)
	fleet, err := multicluster.New("test", p, func(context.Context, *multicluster.Cluster) (struct{}, error) { return struct{}{}, nil },
		multicluster.WithClients(func(context.Context, string, *rest.Config) (kubernetes.Interface, error) {
			return fake.NewClientset(), nil
		}))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fleet.Run(ctx) }()
	defer func() {
		cancel()
		assert.NoError(t, <-done)
	}()

	require.Eventually(t, func() bool { st, ok := fleet.Status("good"); return ok && st.Ready }, waitFor, time.Millisecond, "the usable member")
	for name, w := range want {
		require.Eventually(t, func() bool { _, ok := fleet.Status(name); return ok }, waitFor, time.Millisecond, name)
		st, _ := fleet.Status(name)
		assert.False(t, st.Ready, name)
		require.Error(t, st.Err, name)
		assert.Equal(t, w.err, st.Err.Error(), name)
		assert.Equal(t, w.reason == kubeconfig.ReasonNotAllowed, errors.Is(st.Err, kubeconfig.ErrNotAllowed), name)
	}
	refused := p.Refused()
	assert.Len(t, refused, len(want), "%v", refused)
	for name, w := range want {
		if assert.Contains(t, refused, name) {
			assert.EqualError(t, refused[name], w.err, name)
		}
	}
	assert.Equal(t, []string{"good"}, fleet.Clusters(), "only the usable Secret's member is engaged")
	assert.Equal(t, []string{"good", "no-key", "not-allowed", "unreadable"}, fleet.Members(), "refused members are listed, for a status across the fleet")
	require.Eventually(t, func() bool {
		evs, err := client.CoreV1().Events("fleet").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		got := map[string]string{}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == "Secret" {
				got[e.InvolvedObject.Name] = e.Reason + ": " + e.Message
			}
		}
		for name, w := range want {
			if got[name] != w.reason+": "+w.event {
				return false
			}
		}
		return len(got) == len(want)
	}, waitFor, 10*time.Millisecond, "a Warning event on each unusable Secret")

	// A Secret fixed is a member, and is no longer listed as refused.
	_, err = client.CoreV1().Secrets("fleet").Update(ctx, secret("no-key", true, kubeconfigFor("https://no-key:6443", "t")), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { st, ok := fleet.Status("no-key"); return ok && st.Ready }, waitFor, time.Millisecond)
	assert.NotContains(t, p.Refused(), "no-key")
	// A refused Secret deleted is no longer listed either.
	require.NoError(t, client.CoreV1().Secrets("fleet").Delete(ctx, "unreadable", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { _, ok := p.Refused()["unreadable"]; return !ok }, waitFor, time.Millisecond)
	_, ok := fleet.Status("unreadable")
	assert.False(t, ok, "the Status of a deleted Secret's cluster")
}
