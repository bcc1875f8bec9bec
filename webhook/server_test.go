package webhook_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/metrics/metricstest"
	"github.com/ctrlkit/ctrlkit/webhook"
	"github.com/ctrlkit/ctrlkit/webhook/webhooktest"
)

// serve serves s on 127.0.0.1 over TLS until the test ends and returns
// its URL.
func serve(t *testing.T, s *webhook.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(tls.NewListener(ln, s.TLSConfig()))
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return "https://" + ln.Addr().String()
}

// call posts one AdmissionReview on a new connection, as the API server
// may, and returns the serial number of the certificate it was served
// with and the response.
func call(client *http.Client, url string) (*big.Int, *admissionv1.AdmissionResponse, error) {
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  webhooktest.Request(admissionv1.Create, deployment(ptr.To[int32](1)), nil),
	})
	if err != nil {
		return nil, nil, err
	}
	resp, err := client.Post(url+"/validate", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, nil, err
	}
	return resp.TLS.PeerCertificates[0].SerialNumber, out.Response, nil
}

func newClient(ca *webhooktest.CA) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true, // a handshake per request, as after a rotation
	}}
}

func TestServerServesOverTLSAndCounts(t *testing.T) {
	ca := webhooktest.NewCA(t)
	certs, err := webhook.NewCertFiles(ca.Issue(t, t.TempDir(), 10, time.Now().Add(time.Hour)))
	require.NoError(t, err)
	validating, err := webhook.Validating(validateReplicas)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	rec, err := metrics.New(reg)
	require.NoError(t, err)
	s, err := webhook.NewServer(":9443", certs, webhook.Handle("/validate", validating), webhook.WithMetrics(rec))
	require.NoError(t, err)
	assert.Equal(t, ":9443", s.Addr())
	assert.Equal(t, []string{"/validate"}, s.Paths())
	require.NoError(t, s.Ready())

	url := serve(t, s)
	serial, resp, err := call(newClient(ca), url)
	require.NoError(t, err)
	assert.Equal(t, int64(10), serial.Int64())
	assert.True(t, resp.Allowed)
	assert.Equal(t, 1.0, metricstest.Value(t, reg, "controller_runtime_webhook_requests_total", map[string]string{"webhook": "/validate", "code": "200"}))

	get, err := newClient(ca).Get(url + "/validate")
	require.NoError(t, err)
	get.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, get.StatusCode)
	other, err := newClient(ca).Post(url+"/other", "application/json", nil)
	require.NoError(t, err)
	other.Body.Close()
	assert.Equal(t, http.StatusNotFound, other.StatusCode)
}

// TestCertificateRotatedWhileRequestsFlow rewrites the files while
// requests flow, the certificate first and its key after a pause, as a
// careless writer would: no request fails, and the new certificate is
// served once both are on disk.
func TestCertificateRotatedWhileRequestsFlow(t *testing.T) {
	ca := webhooktest.NewCA(t)
	dir := t.TempDir()
	certs, err := webhook.NewCertFiles(ca.Issue(t, dir, 1, time.Now().Add(time.Hour)))
	require.NoError(t, err)
	validating, err := webhook.Validating(validateReplicas)
	require.NoError(t, err)
	s, err := webhook.NewServer(":0", certs, webhook.Handle("/validate", validating))
	require.NoError(t, err)
	url := serve(t, s)

	ctx, stop := context.WithCancel(t.Context())
	var calls, failures atomic.Int64
	var latest atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range 4 {
		wg.Go(func() {
			client := newClient(ca)
			for ctx.Err() == nil {
				serial, resp, err := call(client, url)
				calls.Add(1)
				if err != nil || !resp.Allowed {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				latest.Store(serial.Int64())
			}
		})
	}
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return calls.Load() > 20, nil
	}))

	newCertFile, newKeyFile := ca.Issue(t, t.TempDir(), 2, time.Now().Add(time.Hour))
	copyFile(t, newCertFile, filepath.Join(dir, "tls.crt"))
	// The key follows once a check has found the certificate without it.
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return certs.Err() != nil, nil
	}), "a reload of the new certificate with the old key fails")
	copyFile(t, newKeyFile, filepath.Join(dir, "tls.key"))
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return latest.Load() == 2, nil
	}), "the new certificate is served")
	before := calls.Load()
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return calls.Load() > before+20, nil
	}))
	stop()
	wg.Wait()
	assert.Zero(t, failures.Load(), "requests failed during the rotation, the first: %v", firstErr.Load())
	assert.NoError(t, certs.Err(), "the last reload succeeded")
	t.Logf("%d requests, %d failed", calls.Load(), failures.Load())
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o600))
}

func TestCertFilesKeepTheLastGoodPair(t *testing.T) {
	ca := webhooktest.NewCA(t)
	dir := t.TempDir()
	certs, err := webhook.NewCertFiles(ca.Issue(t, dir, 1, time.Now().Add(time.Hour)))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), []byte("not a certificate"), 0o600))
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		cert, err := certs.GetCertificate(nil)
		require.NoError(t, err)
		require.NotNil(t, cert, "the last good pair")
		return certs.Err() != nil, nil
	}))
	assert.ErrorContains(t, certs.Err(), "tls.crt")
	cert, err := certs.GetCertificate(nil)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, int64(1), leaf.SerialNumber.Int64())
}

func TestServerReady(t *testing.T) {
	ca := webhooktest.NewCA(t)
	validating, err := webhook.Validating(validateReplicas)
	require.NoError(t, err)
	certs, err := webhook.NewCertFiles(ca.Issue(t, t.TempDir(), 1, time.Now().Add(-time.Minute)))
	require.NoError(t, err)
	s, err := webhook.NewServer(":0", certs, webhook.Handle("/validate", validating))
	require.NoError(t, err)
	assert.ErrorContains(t, s.Ready(), "expired")
}

func TestNewCertFilesFails(t *testing.T) {
	ca := webhooktest.NewCA(t)
	dir := t.TempDir()
	certFile, _ := ca.Issue(t, dir, 1, time.Now().Add(time.Hour))
	_, otherKey := ca.Issue(t, t.TempDir(), 2, time.Now().Add(time.Hour))
	_, err := webhook.NewCertFiles(certFile, otherKey)
	assert.Error(t, err, "a key of another certificate")
	_, err = webhook.NewCertFiles(filepath.Join(dir, "missing.crt"), otherKey)
	assert.Error(t, err)
}

func TestNewServerRefuses(t *testing.T) {
	ca := webhooktest.NewCA(t)
	certs, err := webhook.NewCertFiles(ca.Issue(t, t.TempDir(), 1, time.Now().Add(time.Hour)))
	require.NoError(t, err)
	h, err := webhook.Validating(validateReplicas)
	require.NoError(t, err)
	tests := []struct {
		name  string
		addr  string
		certs webhook.Certificates
		opts  []webhook.Option
		want  string
	}{
		{name: "no address", certs: certs, opts: []webhook.Option{webhook.Handle("/v", h)}, want: "no address"},
		{name: "no certificates", addr: ":9443", opts: []webhook.Option{webhook.Handle("/v", h)}, want: "no certificates"},
		{name: "no webhook", addr: ":9443", certs: certs, want: "no webhook"},
		{name: "a relative path", addr: ":9443", certs: certs, opts: []webhook.Option{webhook.Handle("v", h)}, want: "does not start with /"},
		{name: "a path twice", addr: ":9443", certs: certs, opts: []webhook.Option{webhook.Handle("/v", h), webhook.Handle("/v", h)}, want: "given twice"},
		{name: "no handler", addr: ":9443", certs: certs, opts: []webhook.Option{webhook.Handle("/v", nil)}, want: "no handler"},
		{name: "a handler option", addr: ":9443", certs: certs, opts: []webhook.Option{webhook.Handle("/v", h), webhook.WithKind("Foo")}, want: "WithKind"},
		{name: "a validating handler's option", addr: ":9443", certs: certs, opts: []webhook.Option{webhook.Handle("/v", h), webhook.WithConnect()}, want: "WithConnect"},
		{name: "a nil recorder", addr: ":9443", certs: certs, opts: []webhook.Option{webhook.Handle("/v", h), webhook.WithMetrics(nil)}, want: "recorder is nil"},
		{name: "a nil TLS function", addr: ":9443", certs: certs, opts: []webhook.Option{webhook.Handle("/v", h), webhook.WithTLSConfig(nil)}, want: "WithTLSConfig: the function is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := webhook.NewServer(tt.addr, tt.certs, tt.opts...)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	for _, opt := range []webhook.Option{webhook.Handle("/v", h), webhook.WithTLSConfig(func(*tls.Config) {})} {
		_, err = webhook.Validating(validateReplicas, opt)
		assert.ErrorContains(t, err, "apply to NewServer")
	}
}

// clientCertificate is a self-signed client certificate and the pool that
// trusts it.
func clientCertificate(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// TestWithTLSConfig serves with options that a cluster's policy asks for
// and shakes hands with clients that meet them and clients that do not.
func TestWithTLSConfig(t *testing.T) {
	ca := webhooktest.NewCA(t)
	certs, err := webhook.NewCertFiles(ca.Issue(t, t.TempDir(), 10, time.Now().Add(time.Hour)))
	require.NoError(t, err)
	validating, err := webhook.Validating(validateReplicas)
	require.NoError(t, err)
	clientCert, clientCAs := clientCertificate(t)
	client := func(configure func(*tls.Config)) *http.Client {
		c := newClient(ca)
		configure(c.Transport.(*http.Transport).TLSClientConfig)
		return c
	}
	type attempt struct {
		name    string
		client  *http.Client
		wantErr string // empty: the request is answered
	}
	tests := []struct {
		name     string
		opts     []webhook.Option
		attempts []attempt
	}{
		{
			name: "TLS 1.3 only",
			opts: []webhook.Option{webhook.WithTLSConfig(func(c *tls.Config) { c.MinVersion = tls.VersionTLS13 })},
			attempts: []attempt{
				{name: "a TLS 1.2 client is refused", client: client(func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }), wantErr: "protocol version"},
				{name: "a TLS 1.3 client is answered", client: client(func(c *tls.Config) { c.MinVersion = tls.VersionTLS13 })},
			},
		},
		{
			name: "client certificates required",
			opts: []webhook.Option{webhook.WithTLSConfig(func(c *tls.Config) {
				c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
			})},
			attempts: []attempt{
				{name: "a client without a certificate is refused", client: client(func(*tls.Config) {}), wantErr: "certificate required"},
				{name: "a client with a certificate is answered", client: client(func(c *tls.Config) { c.Certificates = []tls.Certificate{clientCert} })},
			},
		},
		{
			name: "the options apply in order and keep the certificate",
			opts: []webhook.Option{
				webhook.WithTLSConfig(func(c *tls.Config) { c.MinVersion = tls.VersionTLS13 }),
				webhook.WithTLSConfig(func(c *tls.Config) {
					c.MinVersion = tls.VersionTLS12
					c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, errors.New("not this one") }
				}),
			},
			attempts: []attempt{
				{name: "a TLS 1.2 client is answered", client: client(func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 })},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := webhook.NewServer(":9443", certs, append([]webhook.Option{webhook.Handle("/validate", validating)}, tt.opts...)...)
			require.NoError(t, err)
			url := serve(t, s)
			for _, a := range tt.attempts {
				t.Run(a.name, func(t *testing.T) {
					serial, resp, err := call(a.client, url)
					if a.wantErr != "" {
						assert.ErrorContains(t, err, a.wantErr)
						return
					}
					require.NoError(t, err)
					assert.Equal(t, int64(10), serial.Int64(), "the certificate of Certificates")
					assert.True(t, resp.Allowed)
				})
			}
		})
	}
}
