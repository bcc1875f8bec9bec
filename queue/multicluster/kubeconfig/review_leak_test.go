package kubeconfig_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
)

// A kubeconfig refused because it cannot be read must not have its
// credentials copied into the Warning event (readable by whoever may read
// events, e.g. the "view" role, which may not read Secrets), the log or
// the Fleet's Status. A kubeconfig that lists a user twice (a merge gone
// wrong) makes client-go's conversion error print every user, token and
// password included.
func TestReviewRefusalDoesNotLeakCredentials(t *testing.T) {
	const token, password = "tok-3f9a1c7e-do-not-leak", "pw-77b2-do-not-leak"
	data := []byte(`apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster: {server: "https://member:6443"}
users:
- name: u
  user: {token: ` + token + `}
- name: u
  user: {username: admin, password: ` + password + `}
`)
	calls, warnings := reportOf(t, kubeconfig.Config{}, data)
	require.Len(t, calls, 1, "calls: %v", calls)
	require.True(t, strings.HasPrefix(calls[0], "refuse member: "), "refused: %v", calls)
	assert.NotContains(t, calls[0], token, "the refusal (the Fleet's Status) holds the kubeconfig's token")
	assert.NotContains(t, calls[0], password, "the refusal (the Fleet's Status) holds the kubeconfig's password")
	require.Eventually(t, func() bool { return len(warnings()) > 0 }, waitFor, 10*time.Millisecond)
	assert.False(t, slices.ContainsFunc(warnings(), func(w string) bool {
		return strings.Contains(w, token) || strings.Contains(w, password)
	}), "the Warning event on the Secret holds the kubeconfig's credentials: %q", warnings())
}
