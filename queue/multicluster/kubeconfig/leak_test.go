package kubeconfig_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
)

// logBuffer is a log's output, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A kubeconfig that cannot be read, or is refused, with credentials in it
// (a token, a password, a key, a proxy's or server's password): the
// refusal (the Fleet's Status), the Warning event on the Secret and the
// log say what is wrong, and none holds the credential.
func TestRefusalsHoldNoCredential(t *testing.T) {
	const secret = "s3cr3t-do-not-leak"
	head := "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n"
	cluster := "clusters:\n- name: c\n  cluster: {server: \"https://member:6443\"}\n"
	user := "users:\n- name: u\n  user: {token: " + secret + "}\n"
	tests := []struct {
		name       string
		kubeconfig string
		want       string // in the refusal
	}{
		{name: "a user named twice", want: `cannot read the kubeconfig: duplicate user name "u"`,
			kubeconfig: head + cluster + user + "- name: u\n  user: {username: admin, password: " + secret + "}\n"},
		{name: "a user named twice, in JSON", want: `cannot read the kubeconfig: duplicate user name "u"`,
			kubeconfig: `{"apiVersion":"v1","kind":"Config","current-context":"c","contexts":[{"name":"c","context":{"cluster":"c","user":"u"}}],` +
				`"clusters":[{"name":"c","cluster":{"server":"https://m:6443"}}],"users":[{"name":"u","user":{"token":"` + secret + `"}},{"name":"u","user":{"username":"admin","password":"` + secret + `"}}]}`},
		{name: "a cluster named twice", want: `cannot read the kubeconfig: duplicate cluster name "c"`,
			kubeconfig: head + user + "clusters:\n- name: c\n  cluster: {server: \"https://member:6443\", proxy-url: \"http://proxy:" + secret + "@proxy:3128\"}\n" +
				"- name: c\n  cluster: {server: \"https://other:6443\"}\n"},
		{name: "a context named twice", want: `cannot read the kubeconfig: duplicate context name "c"`,
			kubeconfig: head + "- name: c\n  context: {cluster: c, user: u}\n" + cluster + user},
		{name: "an extension named twice", want: `cannot read the kubeconfig: duplicate extension name "x" of user "u"`,
			kubeconfig: head + cluster + "users:\n- name: u\n  user:\n    token: " + secret + "\n    extensions:\n    - {name: x, extension: {key: " + secret + "}}\n    - {name: x, extension: {}}\n"},
		{name: "a number as the password", want: `cannot read the kubeconfig: users.user.password: a number where a string belongs`,
			kubeconfig: head + cluster + "users:\n- name: u\n  user: {username: admin, password: 7" + strings.Repeat("3", 20) + "}\n"},
		{name: "an object as the token", want: `cannot read the kubeconfig: users.user.token: an object where a string belongs`,
			kubeconfig: head + cluster + "users:\n- name: u\n  user: {token: {" + secret + ": x}}\n"},
		{name: "a key that is a list", want: `cannot read the kubeconfig: not YAML or JSON`,
			kubeconfig: head + cluster + "users:\n- name: u\n  user:\n    ? [" + secret + "]\n    : " + secret + "\n"},
		{name: "an unknown anchor", want: `cannot read the kubeconfig: not YAML or JSON`,
			kubeconfig: head + cluster + "users:\n- name: u\n  user: {token: *" + secret + "}\n"},
		{name: "an unterminated string", want: `cannot read the kubeconfig: not YAML or JSON: line `,
			kubeconfig: head + cluster + "users:\n- name: u\n  user: {token: \"" + secret + "}\n"},
		{name: "key data that is not base64", want: `cannot read the kubeconfig: a field of bytes (one of the …-data) is not base64`,
			kubeconfig: head + cluster + "users:\n- name: u\n  user: {client-certificate-data: Q0U=, client-key-data: \"" + secret + "!\"}\n"},
		{name: "another kind", want: `cannot read the kubeconfig: its apiVersion and kind are not v1 and Config`,
			kubeconfig: strings.Replace(head, "kind: Config", "kind: Secret", 1) + cluster + user + "data: {token: " + secret + "}\n"},
		{name: "a password in the server's URL, without TLS", want: `cluster "c": server http://redacted@member:6443 without TLS: not allowed`,
			kubeconfig: head + "clusters:\n- name: c\n  cluster: {server: \"http://admin:" + secret + "@member:6443\"}\n" + user},
		{name: "a password in a proxy's URL that cannot be parsed", want: `cannot read the kubeconfig: invalid configuration: invalid 'proxy-url' "http://redacted@proxy:3128/%zz"`,
			kubeconfig: head + "clusters:\n- name: c\n  cluster: {server: \"https://member:6443\", proxy-url: \"http://proxy:" + secret + "@proxy:3128/%zz\"}\n" + user},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &logBuffer{}
			logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(log), textlogger.Verbosity(10)))
			calls, warnings := reportIn(klog.NewContext(context.Background(), logger), t, kubeconfig.Config{}, []byte(tt.kubeconfig))
			require.Len(t, calls, 1, "calls: %v", calls)
			require.True(t, strings.HasPrefix(calls[0], "refuse member: "), "refused: %v", calls)
			assert.Contains(t, calls[0], tt.want, "the refusal says what is wrong")
			assert.NotContains(t, calls[0], secret, "the refusal (the Fleet's Status)")
			require.Eventually(t, func() bool { return len(warnings()) > 0 }, waitFor, 10*time.Millisecond)
			for _, w := range warnings() {
				assert.Contains(t, w, tt.want, "the Warning event says what is wrong")
				assert.NotContains(t, w, secret, "the Warning event")
			}
			assert.Contains(t, log.String(), "A Secret is no member")
			assert.NotContains(t, log.String(), secret, "the log")
		})
	}
}

// A kubeconfig refused because it cannot be read must not have its
// credentials copied into the Warning event (readable by whoever may read
// events, e.g. the "view" role, which may not read Secrets), the log or
// the Fleet's Status. A kubeconfig that lists a user twice (a merge gone
// wrong) makes client-go's conversion error print every user, token and
// password included.
func TestRefusalDoesNotLeakCredentials(t *testing.T) {
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

// A password in a URL's user info may hold an "@" (Go's URL parser, and
// so client-go, take the user info up to the last "@" of the authority):
// a refusal of such a kubeconfig (an http:// server, refused by default)
// must not print any part of the password into the refusal (the Fleet's
// Status), the Warning event or the log.
func TestRefusalRedactsAPasswordWithAnAt(t *testing.T) {
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
