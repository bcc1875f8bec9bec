package kubeconfig_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
)

// A password in a URL's user info may hold an "@" (Go's URL parser, and
// so client-go, take the user info up to the last "@" of the authority):
// a refusal of such a kubeconfig (an http:// server, refused by default)
// must not print any part of the password into the refusal (the Fleet's
// Status), the Warning event or the log.
func TestReview3RefusalRedactsAPasswordWithAnAt(t *testing.T) {
	const secret = "s3cr3t-do-not-leak"
	kc := "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n" +
		"clusters:\n- name: c\n  cluster: {server: \"http://admin:pw@" + secret + "@member:6443\"}\n" +
		"users:\n- name: u\n  user: {}\n"
	log := &logBuffer{}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(log), textlogger.Verbosity(10)))
	calls, warnings := reportIn(klog.NewContext(context.Background(), logger), t, kubeconfig.Config{}, []byte(kc))
	require.Len(t, calls, 1, "calls: %v", calls)
	require.True(t, strings.HasPrefix(calls[0], "refuse member: "), "refused: %v", calls)
	assert.NotContains(t, calls[0], secret, "the refusal (the Fleet's Status) holds the password's part after its '@'")
	require.Eventually(t, func() bool { return len(warnings()) > 0 }, waitFor, 10*time.Millisecond)
	for _, w := range warnings() {
		assert.NotContains(t, w, secret, "the Warning event holds the password's part after its '@'")
	}
	assert.NotContains(t, log.String(), secret, "the log holds the password's part after its '@'")
}
