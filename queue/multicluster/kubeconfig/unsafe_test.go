package kubeconfig_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/internal/memberstest"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
)

// kubeconfigWith is a kubeconfig of one cluster and one user, with the
// given YAML lines added to the cluster and to the user (a basic auth
// user without).
func kubeconfigWith(server, cluster, user string) []byte {
	if user == "" {
		user = "username: someone\npassword: secret"
	}
	indent := func(lines string) string {
		if lines == "" {
			return ""
		}
		return "    " + strings.ReplaceAll(strings.TrimSpace(lines), "\n", "\n    ") + "\n"
	}
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
%susers:
- name: u
  user:
%scontexts:
- name: c
  context:
    cluster: c
    user: u
current-context: c
`, server, indent(cluster), indent(user))
}

// operatorFile is a file of the operator's that a kubeconfig names.
func operatorFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "operator-secret")
	require.NoError(t, os.WriteFile(path, []byte("operator-secret"), 0o600))
	return path
}

// reportOf runs a Provider with cfg over one labelled Secret of the given
// kubeconfig until it synced, and returns what it reported of the
// Secret's cluster and the Warning events on the Secret.
func reportOf(t *testing.T, cfg kubeconfig.Config, data []byte) (calls []string, warnings func() []string) {
	t.Helper()
	return reportIn(context.Background(), t, cfg, data)
}

// reportIn is reportOf with the Provider run in a context of ctx (whose
// logger it uses).
func reportIn(ctx context.Context, t *testing.T, cfg kubeconfig.Config, data []byte) (calls []string, warnings func() []string) {
	t.Helper()
	client := fake.NewClientset(secret("member", true, data))
	cfg.Client, cfg.Namespace = client, "fleet"
	p, err := kubeconfig.New(cfg)
	require.NoError(t, err)
	m := &memberstest.Recorder{Describe: func(cfg *rest.Config) string {
		return fmt.Sprintf("%s token=%q", cfg.Host, cfg.BearerToken)
	}}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, m) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	require.Eventually(t, func() bool { return slices.Contains(m.Calls(), "synced") }, waitFor, time.Millisecond)
	return slices.DeleteFunc(m.Calls(), func(c string) bool { return c == "synced" }), func() []string {
		evs, err := client.CoreV1().Events("fleet").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		var out []string
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == "member" {
				out = append(out, e.Reason+": "+e.Message)
			}
		}
		return out
	}
}

// A kubeconfig that would run a command in the operator, make it read
// its own files (and send them to the kubeconfig's server), or turn off
// TLS verification is refused by default: the cluster is no member, a
// Warning event on its Secret and the refusal say why.
func TestProviderRefusesUnsafeKubeconfigs(t *testing.T) {
	file := operatorFile(t)
	tests := []struct {
		name          string
		server        string
		cluster, user string
		wantMsg       string
	}{
		{name: "exec plugin", user: "exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never, args: [-c, 'cat /var/run/secrets/kubernetes.io/serviceaccount/token']}",
			wantMsg: `user "u": exec plugin "sh": not allowed`},
		{name: "auth provider plugin", user: "auth-provider: {name: oidc, config: {idp-issuer-url: 'https://issuer', client-id: x, idp-certificate-authority: " + file + "}}",
			wantMsg: `user "u": auth provider "oidc": not allowed`},
		{name: "token file", user: "tokenFile: " + file,
			wantMsg: `user "u": file ` + file + ` (tokenFile): not allowed`},
		{name: "client certificate files", user: "client-certificate: " + file + "\nclient-key: " + file,
			wantMsg: `user "u": file ` + file + ` (client-certificate): not allowed`},
		{name: "certificate authority file", cluster: "certificate-authority: " + file,
			wantMsg: `cluster "c": file ` + file + ` (certificate-authority): not allowed`},
		{name: "insecure TLS", cluster: "insecure-skip-tls-verify: true",
			wantMsg: `cluster "c": insecure-skip-tls-verify: not allowed`},
		{name: "plain HTTP", server: "http://member:6443",
			wantMsg: `cluster "c": server http://member:6443 without TLS: not allowed`},
		{name: "no scheme and no CA is plain HTTP", server: "member:6443",
			wantMsg: `cluster "c": server member:6443 without TLS: not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := tt.server
			if server == "" {
				server = "https://member:6443"
			}
			calls, warnings := reportOf(t, kubeconfig.Config{}, kubeconfigWith(server, tt.cluster, tt.user))
			require.Len(t, calls, 1, "calls: %v", calls)
			assert.True(t, strings.HasPrefix(calls[0], "refuse member: "), "the member is refused, not used: %v", calls)
			assert.Contains(t, calls[0], tt.wantMsg)
			require.Eventually(t, func() bool {
				return slices.ContainsFunc(warnings(), func(w string) bool {
					return strings.HasPrefix(w, kubeconfig.ReasonNotAllowed+": ") && strings.Contains(w, tt.wantMsg)
				})
			}, waitFor, 10*time.Millisecond, "a Warning event on the Secret: %v", warnings())
		})
	}
}

// What the operator allows by name is used; what a kubeconfig holds
// itself needs no opt-in.
func TestProviderAllowsWhatTheOperatorAllows(t *testing.T) {
	file := operatorFile(t)
	allowing := kubeconfig.Config{AllowExec: []string{"kubelogin"}, AllowAuthProviders: []string{"oidc"}, AllowFiles: []string{file}, AllowInsecureTLS: true}
	tests := []struct {
		name          string
		cfg           kubeconfig.Config
		server        string
		cluster, user string
		want          string // the report, or the refusal's start
	}{
		{name: "allowed exec plugin", cfg: allowing, user: "exec: {apiVersion: client.authentication.k8s.io/v1, command: kubelogin, interactiveMode: Never}",
			want: `set member https://member:6443 token=""`},
		{name: "exec plugin not on the list", cfg: allowing, user: "exec: {apiVersion: client.authentication.k8s.io/v1, command: ./kubelogin, interactiveMode: Never}",
			want: `refuse member: user "u": exec plugin "./kubelogin": not allowed`},
		{name: "allowed auth provider", cfg: allowing, user: "auth-provider: {name: oidc, config: {idp-issuer-url: 'https://issuer', client-id: x}}",
			want: `set member https://member:6443 token=""`},
		{name: "auth provider not on the list", cfg: allowing, user: "auth-provider: {name: gcp}",
			want: `refuse member: user "u": auth provider "gcp": not allowed`},
		{name: "allowed file", cfg: allowing, user: "tokenFile: " + file,
			want: `set member https://member:6443 token="operator-secret"`},
		{name: "file not on the list", cfg: allowing, user: "tokenFile: " + file + ".other",
			want: `refuse member: user "u": file ` + file + `.other (tokenFile): not allowed`},
		{name: "relative path to an allowed file", cfg: kubeconfig.Config{AllowFiles: []string{"/"}}, user: "tokenFile: .",
			want: `refuse member: user "u": file . (tokenFile): not allowed`},
		{name: "allowed insecure TLS", cfg: allowing, cluster: "insecure-skip-tls-verify: true",
			want: `set member https://member:6443 token=""`},
		{name: "allowed plain HTTP", cfg: allowing, server: "http://member:6443",
			want: `set member http://member:6443 token=""`},
		{name: "everything refused at once", user: "tokenFile: /a\nclient-key: /b", cluster: "insecure-skip-tls-verify: true",
			want: `refuse member: user "u": file /a (tokenFile): not allowed; user "u": file /b (client-key): not allowed; cluster "c": insecure-skip-tls-verify: not allowed`},
		{name: "no opt-in for what the kubeconfig holds", server: "https://10.0.0.1:6443",
			cluster: "certificate-authority-data: " + "Q0E=" + "\ntls-server-name: member\nproxy-url: http://proxy:3128\ndisable-compression: true",
			user:    "token: t\nclient-certificate-data: Q0U=\nclient-key-data: S0VZ\nact-as: admin",
			want:    `set member https://10.0.0.1:6443 token="t"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := tt.server
			if server == "" {
				server = "https://member:6443"
			}
			calls, _ := reportOf(t, tt.cfg, kubeconfigWith(server, tt.cluster, tt.user))
			require.Len(t, calls, 1, "calls: %v", calls)
			assert.True(t, strings.HasPrefix(calls[0], tt.want), "got %q, want %q", calls[0], tt.want)
		})
	}
}

func TestNewValidatesWhatIsAllowed(t *testing.T) {
	_, err := kubeconfig.New(kubeconfig.Config{Client: fake.NewClientset(), Namespace: "fleet",
		AllowExec: []string{""}, AllowAuthProviders: []string{""}, AllowFiles: []string{"token"}})
	assert.EqualError(t, err, "kubeconfig: an allowed exec command is empty\nan allowed auth provider is empty\nallowed file \"token\" is not an absolute path")
}

// In a Fleet, a refused kubeconfig is a status entry of its cluster that
// says why, the other members go on, and a fixed kubeconfig makes the
// cluster a member.
func TestFleetStatusOfARefusedMember(t *testing.T) {
	ctx := context.Background()
	unsafe := kubeconfigWith("https://evil:6443", "", "exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never}")
	client := fake.NewClientset(secret("good", true, kubeconfigFor("https://good:6443", "t")), secret("evil", true, unsafe))
	p, err := kubeconfig.New(kubeconfig.Config{Client: client, Namespace: "fleet"})
	require.NoError(t, err)
	var built sync.Map
	fleet, err := multicluster.New("test", p, func(context.Context, *multicluster.Cluster) (int, error) { return 0, nil },
		multicluster.WithClients(func(_ context.Context, name string, cfg *rest.Config) (kubernetes.Interface, error) {
			built.Store(name, cfg.Host)
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

	require.Eventually(t, func() bool { s, _ := fleet.Status("good"); return s.Ready }, waitFor, time.Millisecond, "the other member is engaged")
	require.Eventually(t, func() bool { _, ok := fleet.Status("evil"); return ok }, waitFor, time.Millisecond, "the refused member has a status")
	s, _ := fleet.Status("evil")
	assert.False(t, s.Ready)
	require.ErrorIs(t, s.Err, kubeconfig.ErrNotAllowed)
	assert.EqualError(t, s.Err, `user "u": exec plugin "sh": not allowed`)
	assert.Equal(t, []string{"good"}, fleet.Clusters(), "the refused cluster is not engaged")
	assert.Equal(t, []string{"evil", "good"}, fleet.Members(), "the refused cluster is listed, for a status across the fleet")
	_, usedEvil := built.Load("evil")
	assert.False(t, usedEvil, "a client was built of the refused kubeconfig")

	_, err = client.CoreV1().Secrets("fleet").Update(ctx, secret("evil", true, kubeconfigFor("https://evil:6443", "t")), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { s, _ := fleet.Status("evil"); return s.Ready && s.Err == nil }, waitFor, time.Millisecond, "the fixed kubeconfig makes a member")
}
