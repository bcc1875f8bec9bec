package kubeconfig_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
)

// Every user and cluster of a kubeconfig is checked, whether its current
// context names it or not.
func TestUnusedUsersAndClustersAreChecked(t *testing.T) {
	file := operatorFile(t)
	// A kubeconfig whose current context uses cluster "c" and user "u",
	// with a cluster and a user it does not use, each given lines.
	withUnused := func(server, clusterLines, userLines string) []byte {
		indent := func(lines string) string {
			if lines == "" {
				return ""
			}
			return "    " + strings.ReplaceAll(lines, "\n", "\n    ") + "\n"
		}
		return []byte("apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n" +
			"clusters:\n- name: c\n  cluster: {server: \"https://member:6443\"}\n- name: unused\n  cluster:\n    server: " + server + "\n" + indent(clusterLines) +
			"users:\n- name: u\n  user: {token: t}\n- name: unused\n  user:\n" + indent(userLines))
	}
	used := withUnused("https://unused:6443", "", "token: t2")
	unusedUser := func(lines string) []byte { return withUnused("https://unused:6443", "", lines) }
	unusedCluster := func(lines string) []byte { return withUnused("https://unused:6443", lines, "token: t2") }
	tests := []struct {
		name       string
		kubeconfig []byte
		want       string
	}{
		{name: "an exec plugin", kubeconfig: unusedUser("exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never}"),
			want: `user "unused": exec plugin "sh": not allowed`},
		{name: "an auth provider", kubeconfig: unusedUser("auth-provider: {name: gcp}"),
			want: `user "unused": auth provider "gcp": not allowed`},
		{name: "a token file", kubeconfig: unusedUser("tokenFile: " + file),
			want: `user "unused": file ` + file + ` (tokenFile): not allowed`},
		{name: "insecure TLS", kubeconfig: unusedCluster("insecure-skip-tls-verify: true"),
			want: `cluster "unused": insecure-skip-tls-verify: not allowed`},
		{name: "a certificate authority file", kubeconfig: unusedCluster("certificate-authority: " + file),
			want: `cluster "unused": file ` + file + ` (certificate-authority): not allowed`},
		{name: "plain HTTP", kubeconfig: withUnused("http://unused:6443", "", "token: t2"),
			want: `cluster "unused": server http://unused:6443 without TLS: not allowed`},
	}
	// Without them, the kubeconfig makes a member.
	calls, _ := reportOf(t, kubeconfig.Config{}, used)
	require.Equal(t, []string{`set member https://member:6443 token="t"`}, calls)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls, _ := reportOf(t, kubeconfig.Config{}, tt.kubeconfig)
			require.Len(t, calls, 1, "calls: %v", calls)
			assert.Equal(t, "refuse member: "+tt.want, calls[0])
		})
	}
}
