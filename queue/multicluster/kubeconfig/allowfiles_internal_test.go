package kubeconfig

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/internal/memberstest"
)

// AllowFiles allows the file at its path, not another one: a kubeconfig
// that names the allowed path with a ".." after a symbolic link
// (dir/link/../token, which filepath.Clean makes dir/token, while the
// kernel resolves the link first and reads a file of another directory)
// is refused.
func TestAllowFilesIsTheFileAllowedNotALexicalTwin(t *testing.T) {
	dir := t.TempDir()
	allowedDir, otherDir := filepath.Join(dir, "allowed"), filepath.Join(dir, "other")
	require.NoError(t, os.MkdirAll(filepath.Join(otherDir, "sub"), 0o700))
	require.NoError(t, os.MkdirAll(allowedDir, 0o700))
	allowed := filepath.Join(allowedDir, "token")
	require.NoError(t, os.WriteFile(allowed, []byte("allowed-token"), 0o600))
	const secret = "the-operators-other-secret"
	require.NoError(t, os.WriteFile(filepath.Join(otherDir, "token"), []byte(secret), 0o600))
	// A link in the allowed file's directory to a directory elsewhere
	// (as /var/run -> /run, or a volume's links, are).
	require.NoError(t, os.Symlink(filepath.Join(otherDir, "sub"), filepath.Join(allowedDir, "link")))

	named := allowedDir + "/link/../token"
	require.Equal(t, allowed, filepath.Clean(named), "the kubeconfig's path is the allowed one, lexically")
	kc := "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n" +
		"clusters:\n- name: c\n  cluster: {server: \"https://member:6443\"}\n" +
		"users:\n- name: u\n  user: {tokenFile: \"" + named + "\"}\n"

	p, err := New(Config{Client: fake.NewClientset(), Namespace: "fleet", AllowFiles: []string{allowed}})
	require.NoError(t, err)
	var got *rest.Config
	m := &memberstest.Recorder{Describe: func(c *rest.Config) string { got = c; return c.Host }}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "member", Labels: map[string]string{Label: ""}},
		Data: map[string][]byte{DataKey: []byte(kc)}}
	p.set(context.Background(), m, &record.FakeRecorder{}, s)
	calls := m.Calls()
	require.Len(t, calls, 1, "calls: %v", calls)
	if got == nil {
		return // refused: the file named is not the one allowed
	}
	assert.False(t, strings.Contains(got.BearerToken, secret),
		"AllowFiles %q let the kubeconfig's tokenFile %q read %s, a file never allowed: its content is the member's bearer token (%q), sent to the kubeconfig's server",
		allowed, named, filepath.Join(otherDir, "token"), got.BearerToken)
}
