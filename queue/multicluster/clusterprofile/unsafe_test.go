package clusterprofile_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/clusterprofile"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/internal/memberstest"
)

// withCluster is a ClusterProfile listing the access provider "tokens"
// with the given cluster.
func withCluster(cluster map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
		"metadata": map[string]any{"namespace": "fleet", "name": "east"},
		"spec":     map[string]any{"clusterManager": map[string]any{"name": "test"}},
		"status":   map[string]any{"accessProviders": []any{map[string]any{"name": "tokens", "cluster": cluster}}},
	}}
}

// configOf runs a Provider over one ClusterProfile until it synced and
// returns its calls and the config it reported, if any.
func configOf(t *testing.T, u *unstructured.Unstructured) (calls []string, cfg *rest.Config) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{clusterprofile.Resource: "ClusterProfileList"}, u)
	p, err := clusterprofile.New(clusterprofile.Config{Client: client, Namespace: "fleet", Providers: []clusterprofile.AccessProvider{
		{Name: "tokens", Exec: clientcmdv1.ExecConfig{Command: "token-plugin", APIVersion: "client.authentication.k8s.io/v1", ProvideClusterInfo: true}},
	}})
	require.NoError(t, err)
	m := &memberstest.Recorder{Describe: func(c *rest.Config) string { cfg = c; return c.Host }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, m) }()
	require.Eventually(t, func() bool { return slices.Contains(m.Calls(), "synced") }, waitFor, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	return m.Calls(), cfg
}

// Of a ClusterProfile's cluster only what the cluster inventory API's
// access library reads reaches the member's config: the server, the
// certificate authority's data, the proxy and the exec plugin's cluster
// config. Fields that would turn off TLS verification, verify another
// name or read a file of the operator's are left out.
func TestProfileClusterReachesTheConfigAsTheLibraryReadsIt(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(caFile, []byte("operator's CA"), 0o600))
	tests := []struct {
		name  string
		field string
		value any
		check func(t *testing.T, cfg *rest.Config)
	}{
		{name: "insecure-skip-tls-verify", field: "insecure-skip-tls-verify", value: true,
			check: func(t *testing.T, cfg *rest.Config) { assert.False(t, cfg.Insecure) }},
		{name: "tls-server-name", field: "tls-server-name", value: "somebody-else",
			check: func(t *testing.T, cfg *rest.Config) { assert.Empty(t, cfg.ServerName) }},
		{name: "certificate-authority file", field: "certificate-authority", value: caFile,
			check: func(t *testing.T, cfg *rest.Config) { assert.Empty(t, cfg.CAFile) }},
		{name: "disable-compression", field: "disable-compression", value: true,
			check: func(t *testing.T, cfg *rest.Config) { assert.False(t, cfg.DisableCompression) }},
		{name: "what the library reads", check: func(t *testing.T, cfg *rest.Config) {
			assert.Equal(t, []byte("CA"), cfg.CAData)
			require.NotNil(t, cfg.Proxy)
			require.NotNil(t, cfg.ExecProvider)
			assert.Equal(t, "token-plugin", cfg.ExecProvider.Command)
			require.IsType(t, &runtime.Unknown{}, cfg.ExecProvider.Config)
			assert.JSONEq(t, `{"audience":"east"}`, string(cfg.ExecProvider.Config.(*runtime.Unknown).Raw), "the plugin's cluster config")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster := map[string]any{
				"server":    "https://east:6443",
				"proxy-url": "http://proxy:3128",
				"extensions": []any{
					map[string]any{"name": "client.authentication.k8s.io/exec", "extension": map[string]any{"audience": "east"}},
					map[string]any{"name": "other", "extension": map[string]any{"a": "b"}},
				},
			}
			if tt.field != "certificate-authority" {
				cluster["certificate-authority-data"] = "Q0E="
			}
			if tt.field != "" {
				cluster[tt.field] = tt.value
			}
			calls, cfg := configOf(t, withCluster(cluster))
			require.Equal(t, []string{"set east https://east:6443", "synced"}, calls)
			tt.check(t, cfg)
		})
	}
}

// A ClusterProfile whose server would be reached without TLS is no
// member: the exec plugin's credentials would go in the clear.
func TestProfileServerWithoutTLS(t *testing.T) {
	for _, server := range []string{"http://east:6443", "east:6443"} {
		calls, _ := configOf(t, withCluster(map[string]any{"server": server}))
		assert.Equal(t, []string{`refuse east: cluster "member": server ` + server + ` without TLS: not allowed`, "synced"}, calls, server)
	}
}
