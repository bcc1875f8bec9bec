package operator_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/webhook"
	"github.com/ctrlkit/ctrlkit/webhook/webhooktest"
)

func TestRunServesWebhooks(t *testing.T) {
	ca := webhooktest.NewCA(t)
	dir := t.TempDir()
	certs, err := webhook.NewCertFiles(ca.Issue(t, dir, 1, time.Now().Add(time.Hour)))
	require.NoError(t, err)
	validating, err := webhook.Validating(func(_ context.Context, req webhook.Request[*corev1.ConfigMap]) ([]string, field.ErrorList) {
		if req.Object.Data["forbidden"] != "" {
			return nil, field.ErrorList{field.Forbidden(field.NewPath("data", "forbidden"), "not here")}
		}
		return nil, nil
	})
	require.NoError(t, err)
	addr, probes := freeAddr(t), freeAddr(t)
	srv, err := webhook.NewServer(addr, certs, webhook.Handle("/validate", validating))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithProbes(probes), operator.WithWebhooks(srv),
			operator.WithControllers(stub{name: "c", run: untilDone, synced: true}))
	}()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}}}
	review := func(data map[string]string) (*admissionv1.AdmissionResponse, error) {
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: webhooktest.Request(admissionv1.Create, &corev1.ConfigMap{
				TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: data}, nil),
		})
		if err != nil {
			return nil, err
		}
		resp, err := client.Post("https://"+addr+"/validate", "application/json", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var out admissionv1.AdmissionReview
		return out.Response, json.NewDecoder(resp.Body).Decode(&out)
	}
	require.Eventually(t, func() bool { code, _ := get("http://" + probes + "/readyz"); return code == http.StatusOK }, waitFor, 5*time.Millisecond)
	resp, err := review(nil)
	require.NoError(t, err)
	assert.True(t, resp.Allowed)
	resp, err = review(map[string]string{"forbidden": "x"})
	require.NoError(t, err)
	assert.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "data.forbidden: Forbidden: not here")

	// A certificate that expired makes the operator not ready.
	expiredCert, expiredKey := ca.Issue(t, t.TempDir(), 2, time.Now().Add(-time.Minute))
	for from, to := range map[string]string{expiredCert: filepath.Join(dir, "tls.crt"), expiredKey: filepath.Join(dir, "tls.key")} {
		data, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(to, data, 0o600))
	}
	var body string
	require.Eventually(t, func() bool {
		var code int
		code, body = get("http://" + probes + "/readyz")
		return code == http.StatusServiceUnavailable
	}, waitFor, 10*time.Millisecond)
	assert.Contains(t, body, "webhook: the certificate expired")

	cancel()
	require.NoError(t, <-done)
	_, err = review(nil)
	assert.Error(t, err, "the webhooks are stopped with the operator")
}

func TestRunRefusesWebhooksOnAProbeAddress(t *testing.T) {
	ca := webhooktest.NewCA(t)
	certs, err := webhook.NewCertFiles(ca.Issue(t, t.TempDir(), 1, time.Now().Add(time.Hour)))
	require.NoError(t, err)
	validating, err := webhook.Validating(func(context.Context, webhook.Request[*corev1.ConfigMap]) ([]string, field.ErrorList) { return nil, nil })
	require.NoError(t, err)
	addr := freeAddr(t)
	srv, err := webhook.NewServer(addr, certs, webhook.Handle("/validate", validating))
	require.NoError(t, err)
	err = operator.Run(context.Background(), operator.WithProbes(addr), operator.WithWebhooks(srv),
		operator.WithControllers(stub{run: untilDone}))
	assert.ErrorContains(t, err, "the webhooks need an address of their own")
	err = operator.Run(context.Background(), operator.WithWebhooks(nil), operator.WithControllers(stub{run: untilDone}))
	assert.ErrorContains(t, err, "webhook server is nil")
}

func TestFlagsWebhooks(t *testing.T) {
	ca := webhooktest.NewCA(t)
	dir := t.TempDir()
	ca.Issue(t, dir, 1, time.Now().Add(time.Hour))
	validating, err := webhook.Validating(func(context.Context, webhook.Request[*corev1.ConfigMap]) ([]string, field.ErrorList) { return nil, nil })
	require.NoError(t, err)

	var flags operator.Flags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	flags.Bind(fs)
	require.NoError(t, fs.Parse([]string{"--webhook-bind-address=127.0.0.1:9876", "--webhook-cert-dir=" + dir, "--metrics-bind-address=:8080"}))
	srv, err := flags.Webhooks(nil, webhook.Handle("/validate", validating))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:9876", srv.Addr())
	assert.Equal(t, []string{"/validate"}, srv.Paths())
	require.NoError(t, srv.Ready())

	// Counted in the operator's metrics.
	review := webhooktest.Request(admissionv1.Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, nil)
	webhooktest.Admit(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = "/validate" // the server routes by path
		srv.Handler().ServeHTTP(w, r)
	}), review)
	families, err := flags.Registry().Gather()
	require.NoError(t, err)
	var counted bool
	for _, mf := range families {
		counted = counted || mf.GetName() == "controller_runtime_webhook_requests_total"
	}
	assert.True(t, counted, "webhook requests counted")

	require.NoError(t, fs.Parse([]string{"--webhook-cert-dir=" + t.TempDir()}))
	_, err = flags.Webhooks(nil, webhook.Handle("/validate", validating))
	assert.ErrorContains(t, err, "--webhook-cert-dir")

	// With --webhook-cert-secret the operator issues its own: none is
	// served before the server runs.
	require.NoError(t, fs.Parse([]string{"--webhook-cert-secret=ops/webhook-tls", "--webhook-cert-hosts=op.ops.svc,, 127.0.0.1"}))
	require.NoError(t, flags.Validate())
	assert.Equal(t, []string{"op.ops.svc", "127.0.0.1"}, flags.WebhookCertHosts)
	srv, err = flags.Webhooks(&rest.Config{Host: "https://127.0.0.1:1"}, webhook.Handle("/validate", validating))
	require.NoError(t, err)
	assert.ErrorContains(t, srv.Ready(), "not loaded yet")
	_, err = flags.Webhooks(nil, webhook.Handle("/validate", validating))
	assert.ErrorContains(t, err, "--webhook-cert-secret ops/webhook-tls: no REST config")
}

func TestFlagsWebhookCertSecret(t *testing.T) {
	tests := []struct {
		args []string
		want string // in Validate's error; none if empty
	}{
		{args: []string{"--webhook-cert-secret=ops/tls", "--webhook-cert-hosts=op.ops.svc"}},
		{args: []string{"--webhook-cert-secret=tls", "--webhook-cert-hosts=op.ops.svc"}, want: "--webhook-cert-secret must be NAMESPACE/NAME"},
		{args: []string{"--webhook-cert-secret=ops/", "--webhook-cert-hosts=op.ops.svc"}, want: "--webhook-cert-secret must be NAMESPACE/NAME"},
		{args: []string{"--webhook-cert-secret=ops/tls", "--webhook-cert-hosts=,"}, want: "needs --webhook-cert-hosts"},
		{args: []string{"--webhook-cert-secret=ops/tls"}, want: "needs --webhook-cert-hosts"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var flags operator.Flags
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			flags.Bind(fs)
			require.NoError(t, fs.Parse(tt.args))
			err := flags.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
}
