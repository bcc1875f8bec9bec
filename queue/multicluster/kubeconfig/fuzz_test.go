package kubeconfig

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/internal/memberstest"
)

// fuzzSeeds are kubeconfigs of every kind the provider refuses or takes;
// "$SECRET" stands for a file of the operator's that no policy allows,
// "$ALLOWED" for one the permissive policy allows.
var fuzzSeeds = []string{
	"",
	"not: [a kubeconfig",
	`{"apiVersion":"v1","kind":"Config","current-context":"c","clusters":[{"name":"c","cluster":{"server":"https://m:6443"}}],"users":[{"name":"u","user":{"token":"t"}}],"contexts":[{"name":"c","context":{"cluster":"c","user":"u"}}]}`,
	kubeconfigYAML("https://m:6443", "certificate-authority-data: Q0E=\ntls-server-name: m\nproxy-url: http://proxy:3128", "token: t"),
	kubeconfigYAML("https://m:6443", "", "exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never, args: [-c, id]}"),
	kubeconfigYAML("https://m:6443", "", "exec: {apiVersion: client.authentication.k8s.io/v1, command: kubelogin, interactiveMode: Never, env: [{name: LD_PRELOAD, value: $SECRET}]}"),
	kubeconfigYAML("https://m:6443", "", "auth-provider: {name: oidc, config: {idp-issuer-url: 'https://issuer', client-id: x, idp-certificate-authority: $SECRET}}"),
	kubeconfigYAML("https://m:6443", "", "auth-provider: {name: gcp}"),
	kubeconfigYAML("https://m:6443", "", "tokenFile: $SECRET"),
	kubeconfigYAML("https://m:6443", "", "tokenFile: $ALLOWED"),
	kubeconfigYAML("https://m:6443", "", "token: t\ntokenFile: ../../$SECRET"),
	kubeconfigYAML("https://m:6443", "", "client-certificate: $SECRET\nclient-key: $SECRET"),
	kubeconfigYAML("https://m:6443", "", "client-certificate: $ALLOWED\nclient-key: $ALLOWED"),
	kubeconfigYAML("https://m:6443", "certificate-authority: $SECRET", "token: t"),
	kubeconfigYAML("https://m:6443", "insecure-skip-tls-verify: true", "token: t"),
	kubeconfigYAML("http://m:6443", "", "token: t"),
	kubeconfigYAML("m:6443", "", "token: t"),
	kubeconfigYAML("m:6443", "certificate-authority-data: Q0E=", "token: t"),
	kubeconfigYAML("", "", "token: t"),
	kubeconfigYAML("https://m:6443", "", "username: a\npassword: b\nact-as: admin"),
	// A user the current context does not name.
	kubeconfigYAML("https://m:6443", "", "token: t") + "- name: unused\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never}\n",
	kubeconfigYAML("https://m:6443", "", "token: t") + "- name: unused\n  user:\n    tokenFile: $SECRET\n",
	// A cluster the current context does not name.
	strings.Replace(kubeconfigYAML("https://m:6443", "", "token: t"), "users:", "- name: unused\n  cluster: {server: \"https://u:6443\", insecure-skip-tls-verify: true}\nusers:", 1),
	strings.Replace(kubeconfigYAML("https://m:6443", "", "token: t"), "users:", "- name: unused\n  cluster: {server: \"http://u:6443\"}\nusers:", 1),
	strings.Replace(kubeconfigYAML("https://m:6443", "", "token: t"), "users:", "- name: unused\n  cluster: {server: \"https://u:6443\", certificate-authority: $SECRET}\nusers:", 1),
	// A user named twice: client-go cannot load it.
	kubeconfigYAML("https://m:6443", "", "token: t") + "- name: u\n  user: {username: a, password: b}\n",
}

// kubeconfigYAML is a kubeconfig of one cluster, user and context, with
// the given YAML lines in the cluster and the user; its users are last.
func kubeconfigYAML(server, cluster, user string) string {
	indent := func(lines string) string {
		if lines == "" {
			return ""
		}
		return "    " + strings.ReplaceAll(lines, "\n", "\n    ") + "\n"
	}
	return "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n" +
		"clusters:\n- name: c\n  cluster:\n    server: " + server + "\n" + indent(cluster) +
		"users:\n- name: u\n  user:\n" + indent(user)
}

// FuzzKubeconfig gives arbitrary kubeconfigs to the provider, as a
// Secret's, with the default Config and with one that allows an exec
// plugin, an auth provider, a file and insecure TLS by name, and checks
// that a member's config never runs a command, reads a file or skips TLS
// verification that the Config does not allow, that no user or cluster of
// a member's kubeconfig asks for such, whether its current context names
// it or not, that the operator's own file never reaches the config, that
// a refused kubeconfig is reported as refused, never also set, and that
// nothing panics.
func FuzzKubeconfig(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	secretFile, allowedFile := filepath.Join(dir, "secret"), filepath.Join(dir, "allowed")
	const secretContent = "the operator's secret"
	if err := os.WriteFile(secretFile, []byte(secretContent), 0o600); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(allowedFile, []byte("allowed"), 0o600); err != nil {
		f.Fatal(err)
	}
	configs := []Config{
		{},
		{AllowExec: []string{"kubelogin"}, AllowAuthProviders: []string{"oidc"}, AllowFiles: []string{allowedFile}, AllowInsecureTLS: true},
	}
	ctx := klog.NewContext(context.Background(), klog.Background().V(10))
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.ReplaceAll(data, []byte("$SECRET"), []byte(secretFile))
		data = bytes.ReplaceAll(data, []byte("$ALLOWED"), []byte(allowedFile))
		for _, cfg := range configs {
			cfg.Client, cfg.Namespace = fake.NewClientset(), "fleet"
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got *rest.Config
			m := &memberstest.Recorder{Describe: func(c *rest.Config) string { got = c; return c.Host }}
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "member", Labels: map[string]string{Label: ""}},
				Data: map[string][]byte{DataKey: data}}
			p.set(ctx, m, &record.FakeRecorder{}, s)
			calls := m.Calls()
			if len(calls) != 1 {
				t.Fatalf("one report expected, got %q", calls)
			}
			if got == nil {
				if !strings.HasPrefix(calls[0], "refuse member: ") {
					t.Fatalf("neither set nor refused: %q", calls[0])
				}
				continue
			}
			checkSafe(t, cfg, got, secretContent)
			checkEveryUserAndCluster(t, cfg, data)
		}
	})
}

// checkSafe fails t if cfg asks for what c does not allow, or holds
// secret.
func checkSafe(t *testing.T, c Config, cfg *rest.Config, secret string) {
	t.Helper()
	if e := cfg.ExecProvider; e != nil && !slices.Contains(c.AllowExec, e.Command) {
		t.Fatalf("exec plugin %q runs, allowed: %q", e.Command, c.AllowExec)
	}
	if a := cfg.AuthProvider; a != nil && !slices.Contains(c.AllowAuthProviders, a.Name) {
		t.Fatalf("auth provider %q runs, allowed: %q", a.Name, c.AllowAuthProviders)
	}
	for _, path := range []string{cfg.BearerTokenFile, cfg.CertFile, cfg.KeyFile, cfg.CAFile} {
		if path != "" && !slices.Contains(c.AllowFiles, path) {
			t.Fatalf("file %q read, allowed: %q", path, c.AllowFiles)
		}
	}
	for _, data := range [][]byte{[]byte(cfg.BearerToken), cfg.CertData, cfg.KeyData, cfg.CAData, []byte(cfg.Password)} {
		if bytes.Contains(data, []byte(secret)) {
			t.Fatal("the operator's file reached the config")
		}
	}
	if !c.AllowInsecureTLS {
		u, _, err := rest.DefaultServerUrlFor(cfg)
		if err != nil || cfg.Insecure || u.Scheme != "https" {
			t.Fatalf("TLS not verified: host %q, insecure %t, %v", cfg.Host, cfg.Insecure, err)
		}
	}
}

// checkEveryUserAndCluster fails t if a user or cluster of kubeconfig, a
// member's, asks for what c does not allow, whether its current context
// names it or not.
func checkEveryUserAndCluster(t *testing.T, c Config, kubeconfig []byte) {
	t.Helper()
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatalf("a member's kubeconfig cannot be loaded: %v", err)
	}
	allowedFile := func(path string) bool {
		return path == "" || (filepath.IsAbs(path) && slices.ContainsFunc(c.AllowFiles, func(f string) bool { return filepath.Clean(f) == filepath.Clean(path) }))
	}
	for name, u := range raw.AuthInfos {
		if e := u.Exec; e != nil && !slices.Contains(c.AllowExec, e.Command) {
			t.Fatalf("user %q: exec plugin %q, allowed: %q", name, e.Command, c.AllowExec)
		}
		if a := u.AuthProvider; a != nil && !slices.Contains(c.AllowAuthProviders, a.Name) {
			t.Fatalf("user %q: auth provider %q, allowed: %q", name, a.Name, c.AllowAuthProviders)
		}
		for _, path := range []string{u.TokenFile, u.ClientCertificate, u.ClientKey} {
			if !allowedFile(path) {
				t.Fatalf("user %q: file %q, allowed: %q", name, path, c.AllowFiles)
			}
		}
	}
	for name, cl := range raw.Clusters {
		if !allowedFile(cl.CertificateAuthority) {
			t.Fatalf("cluster %q: file %q, allowed: %q", name, cl.CertificateAuthority, c.AllowFiles)
		}
		if c.AllowInsecureTLS {
			continue
		}
		if cl.InsecureSkipTLSVerify {
			t.Fatalf("cluster %q: insecure-skip-tls-verify", name)
		}
		if u, err := url.Parse(cl.Server); err == nil && u.Scheme == "http" {
			t.Fatalf("cluster %q: server %q without TLS", name, cl.Server)
		}
	}
}
