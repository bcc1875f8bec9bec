package bench

import (
	"context"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/clusterprofile"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
)

// profileMembers records the configs a Provider reports, by member.
type profileMembers struct {
	mu      sync.Mutex
	configs map[string]*rest.Config
	synced  bool
}

func (m *profileMembers) Set(name string, cfg *rest.Config) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.configs[name] = cfg
}

func (m *profileMembers) Delete(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.configs, name)
}

func (m *profileMembers) Synced() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.synced = true
}

// TestClusterProfilesAsTheAccessLibraryReadsThem gives ClusterProfiles of
// the cluster inventory API's own Go types to a real API server that
// serves the API's own CRD, and checks that the members
// queue/multicluster/clusterprofile reports are reached as the API's
// access library (pkg/access, BuildConfigFromCP) reaches them: the same
// server, certificate authority, exec plugin with the cluster's
// environment under the same policy, the plugin's cluster config and
// proxy, and none of the cluster's fields the library leaves out
// (insecure-skip-tls-verify, tls-server-name, certificate-authority,
// disable-compression); and that a profile the library has no access to
// is no member.
// (The extension of additional arguments, a list as the library reads
// it, is refused by the CRD, which takes only objects as extensions; its
// test, TestClusterProfileArgsAsTheAccessLibraryReadsThem, has no server.)
func TestClusterProfilesAsTheAccessLibraryReadsThem(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-inventory-api").Output()
	require.NoError(t, err, "the cluster inventory API's module")
	crd := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases", "multicluster.x-k8s.io_clusterprofiles.yaml")
	cp := controlplane.StartT(t, controlplane.Options{CRDs: []string{crd}})
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(cp.Config())
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	client, err := dynamic.NewForConfig(cp.Config())
	require.NoError(t, err)
	profiles := client.Resource(clusterprofile.Resource).Namespace("fleet")

	raw := func(v string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(v)} }
	cluster := func(server string, extensions ...clientcmdv1.NamedExtension) clientcmdv1.Cluster {
		return clientcmdv1.Cluster{Server: server, CertificateAuthorityData: []byte("ca of " + server), Extensions: extensions}
	}
	withEverything := cluster("https://east:6443",
		clientcmdv1.NamedExtension{Name: clusterprofile.EnvExtension, Extension: raw(`{"ZONE":"b","TOKEN_FILE":"/profile"}`)},
		clientcmdv1.NamedExtension{Name: "client.authentication.k8s.io/exec", Extension: raw(`{"audience":"east"}`)})
	withEverything.ProxyURL = "http://proxy.east:3128"
	// Fields of the cluster that the library leaves out.
	leftOut := cluster("https://left-out:6443")
	leftOut.InsecureSkipTLSVerify, leftOut.TLSServerName, leftOut.DisableCompression = true, "somebody-else", true
	leftOut.CertificateAuthority = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
	statuses := map[string]inventoryv1alpha1.ClusterProfileStatus{
		"east":   {AccessProviders: []inventoryv1alpha1.AccessProvider{{Name: "tokens", Cluster: withEverything}}},
		"legacy": {CredentialProviders: []inventoryv1alpha1.AccessProvider{{Name: "tokens", Cluster: cluster("https://legacy:6443")}}},
		"both": {
			CredentialProviders: []inventoryv1alpha1.AccessProvider{{Name: "tokens", Cluster: cluster("https://old:6443")}},
			AccessProviders:     []inventoryv1alpha1.AccessProvider{{Name: "tokens", Cluster: cluster("https://new:6443")}},
		},
		"preferred": {AccessProviders: []inventoryv1alpha1.AccessProvider{
			{Name: "tokens", Cluster: cluster("https://by-token:6443")},
			{Name: "workload-identity", Cluster: cluster("https://by-identity:6443")},
		}},
		"unknown":  {AccessProviders: []inventoryv1alpha1.AccessProvider{{Name: "somebody-elses", Cluster: cluster("https://unknown:6443")}}},
		"left-out": {AccessProviders: []inventoryv1alpha1.AccessProvider{{Name: "tokens", Cluster: leftOut}}},
	}
	for name, status := range statuses {
		p := &inventoryv1alpha1.ClusterProfile{
			TypeMeta:   metav1.TypeMeta{APIVersion: inventoryv1alpha1.GroupVersion.String(), Kind: "ClusterProfile"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name},
			Spec:       inventoryv1alpha1.ClusterProfileSpec{DisplayName: name, ClusterManager: inventoryv1alpha1.ClusterManager{Name: "test"}},
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		require.NoError(t, err)
		created, err := profiles.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
		require.NoError(t, err, name)
		p.Status = status
		p.Status.Conditions = []metav1.Condition{} // required by the CRD's schema
		withStatus, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		require.NoError(t, err)
		created.Object["status"] = withStatus["status"]
		_, err = profiles.UpdateStatus(ctx, created, metav1.UpdateOptions{})
		require.NoError(t, err, "the API server takes the status of %s", name)
	}

	// The same access providers for both, in the same order of preference.
	tokens := clientcmdv1.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "token-plugin", Args: []string{"get-token"},
		Env: []clientcmdv1.ExecEnvVar{{Name: "TOKEN_FILE", Value: "/operator"}}, ProvideClusterInfo: true}
	identity := clientcmdv1.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "identity-plugin", ProvideClusterInfo: true}
	ours, library := accessPeers(t, client, []clientcmdv1.ExecConfig{identity, tokens})
	m := runProvider(t, ours, 5)
	for name := range statuses {
		u, err := profiles.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		sameAsLibrary(t, library, u, m)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	assert.Equal(t, "https://new:6443", m.configs["both"].Host, "accessProviders before the deprecated credentialProviders")
	assert.Equal(t, "identity-plugin", m.configs["preferred"].ExecProvider.Command, "the operator's order of preference")
	assert.Equal(t, []clientcmdapi.ExecEnvVar{{Name: "TOKEN_FILE", Value: "/profile"}, {Name: "ZONE", Value: "b"}}, m.configs["east"].ExecProvider.Env)
}

// The extension of additional arguments, which a real API server refuses
// (see above), from a fake dynamic client: the plugin's arguments are the
// library's.
func TestClusterProfileArgsAsTheAccessLibraryReadsThem(t *testing.T) {
	p := &inventoryv1alpha1.ClusterProfile{
		TypeMeta:   metav1.TypeMeta{APIVersion: inventoryv1alpha1.GroupVersion.String(), Kind: "ClusterProfile"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "east"},
		Status: inventoryv1alpha1.ClusterProfileStatus{AccessProviders: []inventoryv1alpha1.AccessProvider{{Name: "tokens", Cluster: clientcmdv1.Cluster{
			Server: "https://east:6443",
			Extensions: []clientcmdv1.NamedExtension{
				{Name: clusterprofile.ArgsExtension, Extension: runtime.RawExtension{Raw: []byte(`["--region","eu"]`)}},
			},
		}}}},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: obj}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{clusterprofile.Resource: "ClusterProfileList"}, u)
	tokens := clientcmdv1.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "token-plugin", Args: []string{"get-token"}}
	ours, library := accessPeers(t, client, []clientcmdv1.ExecConfig{tokens})
	m := runProvider(t, ours, 1)
	sameAsLibrary(t, library, u, m)
	m.mu.Lock()
	defer m.mu.Unlock()
	assert.Equal(t, []string{"get-token", "--region", "eu"}, m.configs["east"].ExecProvider.Args)
}

// accessPeers returns the same access providers for the Provider and for
// the library, in the same order of preference: the first exec config is
// workload-identity's (when there are two), the last tokens', which
// appends the profile's arguments and replaces its environment. The
// library is made anew for each profile: at v0.1.0 it adds a profile's
// arguments and environment to its own exec config, so that they would
// reach every profile it reads after (the Provider copies its config).
func accessPeers(t *testing.T, client dynamic.Interface, execs []clientcmdv1.ExecConfig) (*clusterprofile.Provider, func() *access.Config) {
	t.Helper()
	names := []string{"tokens"}
	if len(execs) == 2 {
		names = []string{"workload-identity", "tokens"}
	}
	var ours []clusterprofile.AccessProvider
	for i, e := range execs {
		o := clusterprofile.AccessProvider{Name: names[i], Exec: e}
		if names[i] == "tokens" {
			o.ProfileArgs, o.ProfileEnv = clusterprofile.ArgsAppend, clusterprofile.EnvReplace
		}
		ours = append(ours, o)
	}
	p, err := clusterprofile.New(clusterprofile.Config{Client: client, Namespace: "fleet", Providers: ours})
	require.NoError(t, err)
	return p, func() *access.Config {
		var theirs []access.Provider
		for i, e := range execs {
			var internal clientcmdapi.ExecConfig
			require.NoError(t, clientcmdv1.Convert_v1_ExecConfig_To_api_ExecConfig(&e, &internal, nil))
			l := access.Provider{Name: names[i], ExecConfig: &internal}
			if names[i] == "tokens" {
				l.ProfileSourcedCLIArgsPolicy, l.ProfileSourcedEnvVarsPolicy = access.ProfileSourcedCLIArgsPolicyAppend, access.ProfileSourcedEnvVarsPolicyReplace
			}
			theirs = append(theirs, l)
		}
		return access.New(theirs)
	}
}

// runProvider runs p until the test ends and waits until it has synced
// and reports n members.
func runProvider(t *testing.T, p *clusterprofile.Provider, n int) *profileMembers {
	t.Helper()
	m := &profileMembers{configs: map[string]*rest.Config{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, m) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	require.Eventually(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.synced && len(m.configs) == n
	}, time.Minute, 10*time.Millisecond, "the members of the profiles the operator has access to")
	return m
}

// sameAsLibrary checks that the member the Provider reported for the
// profile u is reached as the library reaches it, or is no member where
// the library has no access.
func sameAsLibrary(t *testing.T, library func() *access.Config, u *unstructured.Unstructured, m *profileMembers) {
	t.Helper()
	name := u.GetName()
	var p inventoryv1alpha1.ClusterProfile
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p))
	want, wantErr := library().BuildConfigFromCP(&p)
	m.mu.Lock()
	got, member := m.configs[name]
	m.mu.Unlock()
	if wantErr != nil {
		assert.False(t, member, "%s: no member where the library has no access (%v)", name, wantErr)
		return
	}
	require.True(t, member, name)
	{
		assert.Equal(t, want.Host, got.Host, name)
		assert.Equal(t, want.CAData, got.CAData, name)
		assert.Equal(t, want.CAFile, got.CAFile, name)
		assert.Equal(t, want.Insecure, got.Insecure, name)
		assert.Equal(t, want.ServerName, got.ServerName, name)
		assert.Equal(t, want.DisableCompression, got.DisableCompression, name)
		assert.Equal(t, want.ExecProvider.APIVersion, got.ExecProvider.APIVersion, name)
		assert.Equal(t, want.ExecProvider.Command, got.ExecProvider.Command, name)
		assert.Equal(t, want.ExecProvider.Args, got.ExecProvider.Args, name)
		assert.ElementsMatch(t, want.ExecProvider.Env, got.ExecProvider.Env, name)
		assert.Equal(t, want.ExecProvider.InteractiveMode, got.ExecProvider.InteractiveMode, name)
		assert.Equal(t, want.ExecProvider.ProvideClusterInfo, got.ExecProvider.ProvideClusterInfo, name)
		assert.Equal(t, want.ExecProvider.Config, got.ExecProvider.Config, "%s: the plugin's cluster config", name)
		req, err := http.NewRequest(http.MethodGet, got.Host+"/version", nil)
		require.NoError(t, err)
		wantProxy, err := want.Proxy(req)
		require.NoError(t, err)
		var gotProxy *url.URL
		if got.Proxy != nil {
			gotProxy, err = got.Proxy(req)
			require.NoError(t, err)
		}
		assert.Equal(t, wantProxy, gotProxy, "%s: the proxy", name)
	}
}
