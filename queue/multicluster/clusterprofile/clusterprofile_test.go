package clusterprofile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/clusterprofile"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/internal/memberstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitFor = 30 * time.Second

// describe describes a member's config: host, exec command, and the
// exec plugin's cluster config.
func describe(cfg *rest.Config) string {
	execConfig := ""
	if cfg.ExecProvider != nil && cfg.ExecProvider.Config != nil {
		data, _ := json.Marshal(cfg.ExecProvider.Config)
		execConfig = string(data)
	}
	return fmt.Sprintf("%s %s %s", cfg.Host, cfg.ExecProvider.Command, execConfig)
}

// profile is a ClusterProfile whose status lists the given providers
// (name: server) under field.
func profile(name, field string, providers map[string]string) *unstructured.Unstructured {
	var list []any
	for provider, server := range providers {
		cluster := map[string]any{"server": server, "certificate-authority-data": "Q0E="}
		if provider == "with-extension" {
			cluster["extensions"] = []any{map[string]any{"name": "client.authentication.k8s.io/exec", "extension": map[string]any{"clusterName": name}}}
		}
		list = append(list, map[string]any{"name": provider, "cluster": cluster})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
		"metadata": map[string]any{"namespace": "fleet", "name": name},
		"spec":     map[string]any{"clusterManager": map[string]any{"name": "test"}},
		"status":   map[string]any{field: list},
	}}
	return u
}

func TestProvider(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{clusterprofile.Resource: "ClusterProfileList"},
		profile("east", "accessProviders", map[string]string{"tokens": "https://east:6443"}),
		profile("legacy", "credentialProviders", map[string]string{"tokens": "https://legacy:6443"}),
	)
	events := record.NewFakeRecorder(16)
	p, err := clusterprofile.New(clusterprofile.Config{Client: client, Namespace: "fleet", Events: events, Providers: []clusterprofile.AccessProvider{
		{Name: "with-extension", Exec: clientcmdv1.ExecConfig{Command: "ext-plugin", APIVersion: "client.authentication.k8s.io/v1", ProvideClusterInfo: true}},
		{Name: "tokens", Exec: clientcmdv1.ExecConfig{Command: "token-plugin", APIVersion: "client.authentication.k8s.io/v1"}},
	}})
	require.NoError(t, err)
	m := &memberstest.Recorder{Describe: describe}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx, m) }()
	defer func() {
		cancel()
		assert.NoError(t, <-done)
	}()
	require.Eventually(t, func() bool { return slices.Contains(m.Calls(), "synced") }, waitFor, time.Millisecond)
	assert.ElementsMatch(t, []string{"set east https://east:6443 token-plugin ", "set legacy https://legacy:6443 token-plugin ", "synced"}, m.Calls(),
		"both status fields are read")

	profiles := client.Resource(clusterprofile.Resource).Namespace("fleet")
	steps := []struct {
		name string
		do   func() error
		want string
	}{
		{name: "the preferred provider wins, with the cluster's exec extension", want: `set west https://west-ext:6443 ext-plugin {"clusterName":"west"}`, do: func() error {
			_, err := profiles.Create(ctx, profile("west", "accessProviders", map[string]string{"tokens": "https://west:6443", "with-extension": "https://west-ext:6443"}), metav1.CreateOptions{})
			return err
		}},
		{name: "a new server restarts the member", want: "set east https://east-2:6443 token-plugin ", do: func() error {
			_, err := profiles.Update(ctx, profile("east", "accessProviders", map[string]string{"tokens": "https://east-2:6443"}), metav1.UpdateOptions{})
			return err
		}},
		{name: "no configured provider: no member", want: "refuse legacy: its status lists none of the access providers [with-extension tokens]", do: func() error {
			_, err := profiles.Update(ctx, profile("legacy", "accessProviders", map[string]string{"other": "https://legacy:6443"}), metav1.UpdateOptions{})
			return err
		}},
		{name: "deleted", want: "delete east", do: func() error {
			return profiles.Delete(ctx, "east", metav1.DeleteOptions{})
		}},
	}
	for _, step := range steps {
		before := len(m.Calls())
		require.NoError(t, step.do(), step.name)
		require.Eventually(t, func() bool { return slices.Contains(m.Calls()[before:], step.want) }, waitFor, time.Millisecond, "%s: %v", step.name, m.Calls()[before:])
	}
	select {
	case e := <-events.Events:
		assert.True(t, strings.HasPrefix(e, "Warning "+clusterprofile.ReasonNoAccess+" Not a member: its status lists none of the access providers"), e)
	case <-time.After(waitFor):
		t.Fatal("no Warning event")
	}
}

// The arguments and environment a ClusterProfile's cluster adds to the
// exec plugin, by the access provider's policies.
func TestProfileArgsAndEnv(t *testing.T) {
	extensions := []any{
		map[string]any{"name": clusterprofile.ArgsExtension, "extension": []any{"--region", "eu"}},
		map[string]any{"name": clusterprofile.EnvExtension, "extension": map[string]any{"ZONE": "b", "TOKEN_FILE": "/profile"}},
	}
	exec := clientcmdv1.ExecConfig{Command: "plugin", APIVersion: "client.authentication.k8s.io/v1", Args: []string{"get-token"},
		Env: []clientcmdv1.ExecEnvVar{{Name: "TOKEN_FILE", Value: "/operator"}, {Name: "AUDIENCE", Value: "fleet"}}}
	tests := []struct {
		name     string
		args     clusterprofile.ArgsPolicy
		env      clusterprofile.EnvPolicy
		wantArgs []string
		wantEnv  map[string]string
	}{
		{name: "ignored by default", wantArgs: []string{"get-token"}, wantEnv: map[string]string{"TOKEN_FILE": "/operator", "AUDIENCE": "fleet"}},
		{name: "ignored", args: clusterprofile.ArgsIgnore, env: clusterprofile.EnvIgnore,
			wantArgs: []string{"get-token"}, wantEnv: map[string]string{"TOKEN_FILE": "/operator", "AUDIENCE": "fleet"}},
		{name: "appended", args: clusterprofile.ArgsAppend, env: clusterprofile.EnvAppendIfNotExists,
			wantArgs: []string{"get-token", "--region", "eu"}, wantEnv: map[string]string{"TOKEN_FILE": "/operator", "AUDIENCE": "fleet", "ZONE": "b"}},
		{name: "replaced", args: clusterprofile.ArgsAppend, env: clusterprofile.EnvReplace,
			wantArgs: []string{"get-token", "--region", "eu"}, wantEnv: map[string]string{"TOKEN_FILE": "/profile", "AUDIENCE": "fleet", "ZONE": "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := profile("east", "accessProviders", map[string]string{"tokens": "https://east:6443"})
			list, _, _ := unstructured.NestedSlice(u.Object, "status", "accessProviders")
			list[0].(map[string]any)["cluster"].(map[string]any)["extensions"] = extensions
			require.NoError(t, unstructured.SetNestedSlice(u.Object, list, "status", "accessProviders"))
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{clusterprofile.Resource: "ClusterProfileList"}, u)
			p, err := clusterprofile.New(clusterprofile.Config{Client: client, Namespace: "fleet", Providers: []clusterprofile.AccessProvider{
				{Name: "tokens", Exec: exec, ProfileArgs: tt.args, ProfileEnv: tt.env},
			}})
			require.NoError(t, err)
			var got *rest.Config
			m := &memberstest.Recorder{Describe: func(cfg *rest.Config) string { got = cfg; return cfg.Host }}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx, m) }()
			require.Eventually(t, func() bool { return slices.Contains(m.Calls(), "synced") }, waitFor, time.Millisecond)
			cancel()
			require.NoError(t, <-done)
			require.Equal(t, []string{"set east https://east:6443", "synced"}, m.Calls())
			assert.Equal(t, tt.wantArgs, got.ExecProvider.Args)
			env := map[string]string{}
			var names []string
			for _, v := range got.ExecProvider.Env {
				env[v.Name] = v.Value
				names = append(names, v.Name)
			}
			assert.Equal(t, tt.wantEnv, env)
			if tt.env == clusterprofile.EnvAppendIfNotExists || tt.env == clusterprofile.EnvReplace {
				assert.True(t, slices.IsSorted(names), "the same profile makes the same config: %v", names)
			}
			assert.Equal(t, []string{"get-token"}, exec.Args, "the provider's own config is left as it was")
		})
	}

	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	_, err := clusterprofile.New(clusterprofile.Config{Client: client, Namespace: "fleet", Providers: []clusterprofile.AccessProvider{
		{Name: "tokens", Exec: exec, ProfileArgs: "Prepend", ProfileEnv: "Merge"},
	}})
	assert.EqualError(t, err, `clusterprofile: access provider "tokens": unknown ProfileArgs "Prepend"`+"\n"+`access provider "tokens": unknown ProfileEnv "Merge"`)
}

func TestNewValidation(t *testing.T) {
	_, err := clusterprofile.New(clusterprofile.Config{Providers: []clusterprofile.AccessProvider{{Name: "x"}}})
	assert.EqualError(t, err, "clusterprofile: client is nil\nnamespace is empty\naccess provider \"x\" needs a name and an exec command")
	_, err = clusterprofile.New(clusterprofile.Config{})
	assert.ErrorContains(t, err, "no access provider")

	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	_, err = clusterprofile.New(clusterprofile.Config{Client: client, Namespace: "fleet", Providers: []clusterprofile.AccessProvider{
		{Name: "no-version", Exec: clientcmdv1.ExecConfig{Command: "plugin"}},
	}})
	assert.ErrorContains(t, err, `access provider "no-version": `, "client-go's refusal of the exec config, at once")
}
