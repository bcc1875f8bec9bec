package clusterprofile

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/internal/memberstest"
)

// fuzzSeeds are statuses of ClusterProfiles: every field of a cluster, in
// both lists of access providers, and shapes the API does not have.
var fuzzSeeds = []string{
	`{}`,
	`{"accessProviders": "none"}`,
	`{"accessProviders": [{"name": "tokens", "cluster": "https://east:6443"}]}`,
	`{"accessProviders": [{"name": "tokens", "cluster": {"server": "https://east:6443", "certificate-authority-data": "Q0E="}}]}`,
	`{"accessProviders": [{"name": "tokens", "cluster": {"server": "https://east:6443", "certificate-authority-data": "Q0E=",
		"insecure-skip-tls-verify": true, "tls-server-name": "other", "certificate-authority": "/etc/ssl/ca.crt",
		"proxy-url": "http://proxy:3128", "disable-compression": true}}]}`,
	`{"accessProviders": [{"name": "tokens", "cluster": {"server": "http://east:6443"}}]}`,
	`{"accessProviders": [{"name": "tokens", "cluster": {"server": "east:6443"}}]}`,
	`{"accessProviders": [{"name": "tokens", "cluster": {"server": "east:6443", "insecure-skip-tls-verify": true}}]}`,
	`{"accessProviders": [{"name": "tokens", "cluster": {"server": "https://east:6443", "extensions": [
		{"name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-args", "extension": ["--token-file", "/var/run/secrets/token"]},
		{"name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs", "extension": {"KUBECONFIG": "/etc/kubeconfig"}},
		{"name": "client.authentication.k8s.io/exec", "extension": {"audience": "east"}}]}}]}`,
	`{"accessProviders": [{"name": "tokens", "cluster": {"server": "https://east:6443", "extensions": [
		{"name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-args", "extension": {"not": "a list"}}]}}]}`,
	`{"credentialProviders": [{"name": "identity", "cluster": {"server": "https://old:6443"}}],
		"accessProviders": [{"name": "other", "cluster": {"server": "https://new:6443"}}]}`,
	`{"accessProviders": [{"name": "identity", "cluster": {"server": "https://east:6443", "exec": {"command": "sh"}}}]}`,
}

// FuzzClusterProfile gives arbitrary statuses of ClusterProfiles to the
// provider and checks that a member's config runs no command but the
// operator's exec plugin for the access provider it was made for, reads
// no file, verifies TLS with no other name than the server's and the CA
// data of the profile, that a profile is either set or refused, and that
// nothing panics.
func FuzzClusterProfile(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed))
	}
	providers := []AccessProvider{
		{Name: "identity", Exec: clientcmdv1.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "identity-plugin", ProvideClusterInfo: true}},
		{Name: "tokens", Exec: clientcmdv1.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "token-plugin", Args: []string{"get-token"}},
			ProfileArgs: ArgsAppend, ProfileEnv: EnvReplace},
	}
	p, err := New(Config{Client: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Namespace: "fleet", Providers: providers})
	if err != nil {
		f.Fatal(err)
	}
	logger := klog.Background().V(10)
	f.Fuzz(func(t *testing.T, data []byte) {
		var status any
		if err := json.Unmarshal(data, &status); err != nil {
			return
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
			"metadata": map[string]any{"namespace": "fleet", "name": "east"},
			"status":   status,
		}}
		var got *rest.Config
		m := &memberstest.Recorder{Describe: func(c *rest.Config) string { got = c; return c.Host }}
		p.set(logger, m, u)
		p.reported.Delete(m, "east") // the next input is new
		calls := m.Calls()
		if len(calls) != 2 || calls[1] != "delete east" {
			t.Fatalf("one report expected, got %q", calls)
		}
		if got == nil {
			if !strings.HasPrefix(calls[0], "refuse east: ") {
				t.Fatalf("neither set nor refused: %q", calls[0])
			}
			return
		}
		i := slices.IndexFunc(providers, func(a AccessProvider) bool {
			return got.ExecProvider != nil && a.Exec.Command == got.ExecProvider.Command
		})
		switch {
		case i < 0:
			t.Fatalf("an exec plugin not the operator's: %+v", got.ExecProvider)
		case got.AuthProvider != nil:
			t.Fatalf("an auth provider: %+v", got.AuthProvider)
		case got.BearerTokenFile != "" || got.CertFile != "" || got.KeyFile != "" || got.CAFile != "":
			t.Fatalf("a file: %q %q %q %q", got.BearerTokenFile, got.CertFile, got.KeyFile, got.CAFile)
		case got.Insecure || got.ServerName != "":
			t.Fatalf("TLS verification changed: insecure %t, server name %q", got.Insecure, got.ServerName)
		case got.BearerToken != "" || len(got.CertData) > 0 || len(got.KeyData) > 0 || got.Username != "" || got.Impersonate.UserName != "":
			t.Fatal("credentials not the exec plugin's")
		}
		if !slices.Equal(got.ExecProvider.Args[:len(providers[i].Exec.Args)], providers[i].Exec.Args) {
			t.Fatalf("the operator's arguments changed: %q", got.ExecProvider.Args)
		}
		if u, _, err := rest.DefaultServerUrlFor(got); err != nil || u.Scheme != "https" {
			t.Fatalf("no TLS: host %q, %v", got.Host, err)
		}
		if want := caDataOf(status, providers[i].Name); !slices.Equal(got.CAData, want) {
			t.Fatalf("CA data %q, the profile's %q", got.CAData, want)
		}
	})
}

// caDataOf returns the certificate authority data of the cluster status
// lists for the access provider name: the last entry of that name in
// accessProviders, else in credentialProviders.
func caDataOf(status any, name string) []byte {
	st, _ := status.(map[string]any)
	for _, field := range []string{"accessProviders", "credentialProviders"} {
		list, _ := st[field].([]any)
		for j := len(list) - 1; j >= 0; j-- {
			entry, _ := list[j].(map[string]any)
			if n, _ := entry["name"].(string); n != name {
				continue
			}
			cluster, _ := entry["cluster"].(map[string]any)
			ca, _ := cluster["certificate-authority-data"].(string)
			data, _ := base64.StdEncoding.DecodeString(ca)
			return data
		}
	}
	return nil
}
