package clusterprofile_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/clusterprofile"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/internal/memberstest"
)

// withLabels is profile with the given labels.
func withLabels(u *unstructured.Unstructured, lbls map[string]string) *unstructured.Unstructured {
	u.SetLabels(lbls)
	return u
}

// runSelectedProfiles runs a Provider of cfg over client (the ClusterProfiles of
// namespace "fleet"), with the access provider "tokens", until the test
// ends, and returns it once it synced, with what it reported.
func runSelectedProfiles(t *testing.T, client dynamic.Interface, cfg clusterprofile.Config) (*clusterprofile.Provider, *memberstest.Recorder) {
	t.Helper()
	cfg.Client, cfg.Namespace = client, "fleet"
	cfg.Providers = []clusterprofile.AccessProvider{{Name: "tokens", Exec: clientcmdv1.ExecConfig{Command: "token-plugin", APIVersion: "client.authentication.k8s.io/v1"}}}
	p, err := clusterprofile.New(cfg)
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

func profilesClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{clusterprofile.Resource: "ClusterProfileList"}, objs...)
}

// The ClusterProfiles that are members are chosen by a label selector
// (by default, every one of the namespace), such as the cluster manager's
// label of the cluster inventory API.
func TestProviderSelector(t *testing.T) {
	const manager = "x-k8s.io/cluster-manager"
	objs := func() []runtime.Object {
		return []runtime.Object{
			withLabels(profile("ours", "accessProviders", map[string]string{"tokens": "https://ours:6443"}), map[string]string{manager: "ours"}),
			withLabels(profile("theirs", "accessProviders", map[string]string{"tokens": "https://theirs:6443"}), map[string]string{manager: "theirs"}),
			profile("unlabelled", "accessProviders", map[string]string{"tokens": "https://unlabelled:6443"}),
		}
	}
	tests := []struct {
		name     string
		selector labels.Selector
		want     []string
	}{
		{name: "default: every profile", want: []string{"set ours https://ours:6443", "set theirs https://theirs:6443", "set unlabelled https://unlabelled:6443"}},
		{name: "by the cluster manager's label", selector: labels.SelectorFromSet(labels.Set{manager: "ours"}), want: []string{"set ours https://ours:6443"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m := runSelectedProfiles(t, profilesClient(objs()...), clusterprofile.Config{Selector: tt.selector})
			assert.ElementsMatch(t, tt.want, slices.DeleteFunc(m.Calls(), func(c string) bool { return c == "synced" }))
		})
	}

	// A profile that stops matching the selector leaves.
	ctx := context.Background()
	client := profilesClient(objs()...)
	_, m := runSelectedProfiles(t, client, clusterprofile.Config{Selector: labels.SelectorFromSet(labels.Set{manager: "ours"})})
	_, err := client.Resource(clusterprofile.Resource).Namespace("fleet").Update(ctx,
		withLabels(profile("ours", "accessProviders", map[string]string{"tokens": "https://ours:6443"}), map[string]string{manager: "theirs"}), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return slices.Contains(m.Calls(), "delete ours") }, waitFor, time.Millisecond)

	_, err = clusterprofile.New(clusterprofile.Config{Client: client, Namespace: "fleet", Selector: labels.Nothing(),
		Providers: []clusterprofile.AccessProvider{{Name: "tokens", Exec: clientcmdv1.ExecConfig{Command: "p", APIVersion: "client.authentication.k8s.io/v1"}}}})
	assert.ErrorContains(t, err, "selector selects nothing")
}

// A ClusterProfile without usable access is reported with a reason: a
// Warning event on it, the refusal (the Fleet's Status) and
// Provider.Refused; the other members go on.
func TestUnusableProfilesAreReported(t *testing.T) {
	ctx := context.Background()
	client := profilesClient(
		profile("good", "accessProviders", map[string]string{"tokens": "https://good:6443"}),
		profile("other-provider", "accessProviders", map[string]string{"other": "https://other:6443"}),
		profile("plain-http", "accessProviders", map[string]string{"tokens": "http://plain:6443"}),
	)
	events := record.NewFakeRecorder(16)
	p, m := runSelectedProfiles(t, client, clusterprofile.Config{Events: events})
	want := map[string]string{
		"other-provider": "its status lists none of the access providers [tokens]",
		"plain-http":     `cluster "member": server http://plain:6443 without TLS: not allowed`,
	}
	assert.ElementsMatch(t, []string{"set good https://good:6443", "refuse other-provider: " + want["other-provider"], "refuse plain-http: " + want["plain-http"]},
		slices.DeleteFunc(m.Calls(), func(c string) bool { return c == "synced" }))
	refused := p.Refused()
	assert.Len(t, refused, len(want))
	for name, msg := range want {
		if assert.Contains(t, refused, name) {
			assert.EqualError(t, refused[name], msg)
		}
	}
	var got []string
	for range want {
		select {
		case e := <-events.Events:
			got = append(got, e)
		case <-time.After(waitFor):
			t.Fatalf("Warning events: %v", got)
		}
	}
	assert.ElementsMatch(t, []string{"Warning NoAccess Not a member: " + want["other-provider"], "Warning NoAccess Not a member: " + want["plain-http"]}, got)

	// A profile fixed is a member, and no longer listed as refused.
	_, err := client.Resource(clusterprofile.Resource).Namespace("fleet").Update(ctx,
		profile("other-provider", "accessProviders", map[string]string{"tokens": "https://other:6443"}), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return slices.Contains(m.Calls(), "set other-provider https://other:6443") }, waitFor, time.Millisecond)
	assert.NotContains(t, p.Refused(), "other-provider")
}
