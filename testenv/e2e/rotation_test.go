package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/ctrlkit/ctrlkit/metrics/metricstest"
	"github.com/ctrlkit/ctrlkit/webhook"
)

// TestManagedCertificatesRotationSoak runs two replicas of the Widget's
// webhooks, each with managed certificates of its own sharing one Secret,
// behind a front that gives the API server's connections to them in turn,
// while clients create Widgets (the mutating and validating webhooks, and
// conversion to the stored version) and read them in both versions
// without pause. Meanwhile, one after the other: an operator puts a CA of
// its own in the Secret, the Secret is deleted, its CA key is made
// unloadable, it is restored from a copy taken at the start, and a
// configuration the replicas name is deleted before the CA is replaced
// again; a configuration they name never exists. No client request may
// fail, and after each step both replicas serve the Secret's certificate,
// which every published caBundle trusts, and every CA served before is
// still trusted.
func TestManagedCertificatesRotationSoak(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	env := newWebhookEnv(t)
	cfg := env.managedConfig()
	cfg.ValidatingWebhookConfigurations = append(slices.Clone(cfg.ValidatingWebhookConfigurations), "absent")
	s := &rotationSoak{env: env}
	var err error
	s.crds, err = apiextensionsclient.NewForConfig(env.cp.Config())
	require.NoError(t, err)
	var addrs []string
	for range 2 {
		certs, err := webhook.NewManagedCertificates(cfg)
		require.NoError(t, err)
		addr, reg, _ := env.serve(t, certs)
		s.replicas = append(s.replicas, soakReplica{certs: certs, addr: addr, reg: reg})
		addrs = append(addrs, addr)
	}
	s.front = startFaultProxy(t, addrs...)
	env.addr = s.front.addr()
	env.install(t) // waits until the API server calls the webhooks
	s.setPhase("start")
	s.waitConverged(t, func(*x509.Certificate) bool { return true })
	backup := s.secret(t)
	backupCA := signingCA(t, backup)
	t.Logf("replicas converged after %s", time.Since(begin).Round(time.Millisecond))

	ctx, stopClients := context.WithCancel(t.Context())
	var clients sync.WaitGroup
	stop := sync.OnceFunc(func() { stopClients(); clients.Wait() })
	t.Cleanup(stop) // before the replicas stop
	for w := range 2 {
		clients.Go(func() { s.client(ctx, t, w) })
	}
	s.waitRequests(t, 6)

	soakStart := time.Now()
	var replacement *x509.Certificate
	steps := []struct {
		name    string
		disturb func(t *testing.T)
		// want tells whether the Secret's CA is the one the step leads to.
		want func(before, ca *x509.Certificate) bool
	}{
		{
			name: "an operator puts a CA of its own in the Secret",
			disturb: func(t *testing.T) {
				var data map[string][]byte
				data, replacement = operatorIssued(t)
				s.editSecret(t, func(secret *corev1.Secret) { secret.Data = data })
			},
			want: func(_, ca *x509.Certificate) bool { return ca.Equal(replacement) },
		},
		{
			name: "the Secret is deleted",
			disturb: func(t *testing.T) {
				require.NoError(t, env.kube.CoreV1().Secrets("default").Delete(t.Context(), managedSecret, metav1.DeleteOptions{}))
			},
			want: func(before, ca *x509.Certificate) bool { return !ca.Equal(before) },
		},
		{
			name: "the Secret's CA key no longer loads",
			disturb: func(t *testing.T) {
				s.editSecret(t, func(secret *corev1.Secret) { secret.Data[webhook.SecretCAKeyPK] = []byte("not a key") })
			},
			want: func(before, ca *x509.Certificate) bool { return !ca.Equal(before) },
		},
		{
			name: "the Secret is restored from the copy taken at the start",
			disturb: func(t *testing.T) {
				s.editSecret(t, func(secret *corev1.Secret) {
					secret.Data = backup.Data
					secret.Annotations = backup.Annotations
				})
			},
			want: func(_, ca *x509.Certificate) bool { return ca.Equal(backupCA) },
		},
		{
			name: "a named configuration is deleted, then an operator puts a CA of its own in the Secret",
			disturb: func(t *testing.T) {
				require.NoError(t, env.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(t.Context(), "configmaps", metav1.DeleteOptions{}))
				var data map[string][]byte
				data, replacement = operatorIssued(t)
				s.editSecret(t, func(secret *corev1.Secret) { secret.Data = data })
			},
			want: func(_, ca *x509.Certificate) bool { return ca.Equal(replacement) },
		},
	}
	for _, step := range steps {
		stepStart, requestsBefore := time.Now(), s.requests.Load()
		before := signingCA(t, s.secret(t))
		s.setPhase(step.name)
		step.disturb(t)
		s.waitConverged(t, func(ca *x509.Certificate) bool { return step.want(before, ca) })
		converged := time.Since(stepStart)
		s.waitRequests(t, 6) // through the converged replicas
		t.Logf("%s: converged after %s, %d client requests", step.name, converged.Round(time.Millisecond), s.requests.Load()-requestsBefore)
	}
	soak := time.Since(soakStart)
	stop()

	answered := make([]float64, len(s.replicas))
	for i, r := range s.replicas {
		for _, path := range []string{"/mutate-widget", "/validate-widget", "/convert-widget"} {
			// A path a replica was never called at has no series.
			v, _ := metricstest.Lookup(r.reg, "controller_runtime_webhook_requests_total", map[string]string{"webhook": path, "code": "200"})
			answered[i] += v
		}
	}
	t.Logf("soak of %s (%s in all): %d client requests, %d failed; connections per replica %d and %d; webhook requests answered per replica %.0f and %.0f",
		soak.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond), s.requests.Load(), s.failures.Load(),
		s.front.perTarget[0].Load(), s.front.perTarget[1].Load(), answered[0], answered[1])
	assert.Zero(t, s.failures.Load(), "client requests failed (each is logged above)")
	for i := range s.replicas {
		assert.Positive(t, s.front.perTarget[i].Load(), "the API server connected to replica %d", i)
		assert.Positive(t, answered[i], "replica %d answered webhook requests", i)
	}
}

// rotationSoak is the state of TestManagedCertificatesRotationSoak.
type rotationSoak struct {
	env      *webhookEnv
	crds     apiextensionsclient.Interface
	replicas []soakReplica
	front    *faultProxy

	// phase names what the soak is doing, for the log of a failure.
	phase atomic.Pointer[string]
	// requests counts the client requests made, failures those that
	// failed, succeeded the others.
	requests, failures, succeeded atomic.Int64

	// served are the CAs the Secret signed with so far, by the steps'
	// convergence; each must stay trusted.
	served []*x509.Certificate
}

// soakReplica is one replica of the webhooks.
type soakReplica struct {
	certs *webhook.ManagedCertificates
	addr  string
	reg   *prometheus.Registry
}

func (s *rotationSoak) setPhase(name string) { s.phase.Store(&name) }

// client creates Widgets as v1 and reads each back as v1 and as v1alpha1
// until ctx ends, counting the requests; a failure is counted and logged.
func (s *rotationSoak) client(ctx context.Context, t *testing.T, worker int) {
	cfg := s.env.cp.Config()
	cfg.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		s.failed(t, "making a client", err)
		return
	}
	v1 := dyn.Resource(widgetsV1).Namespace("default")
	alpha := dyn.Resource(widgetsV1alpha1).Namespace("default")
	for i := 0; ; i++ {
		name := fmt.Sprintf("soak-%d-%d", worker, i)
		requests := []struct {
			what string
			do   func() (*unstructured.Unstructured, error)
			// field is the spec field the mutating webhook defaults.
			field string
		}{
			{"creating " + widgetV1 + " " + name, func() (*unstructured.Unstructured, error) {
				return v1.Create(ctx, widgetObject(widgetV1, name, map[string]any{"size": int64(1)}), metav1.CreateOptions{})
			}, "color"},
			{"reading " + widgetV1 + " " + name, func() (*unstructured.Unstructured, error) {
				return v1.Get(ctx, name, metav1.GetOptions{})
			}, "color"},
			{"reading " + widgetV1alpha1 + " " + name, func() (*unstructured.Unstructured, error) {
				return alpha.Get(ctx, name, metav1.GetOptions{})
			}, "colour"},
		}
		for _, r := range requests {
			got, err := r.do()
			if ctx.Err() != nil {
				return
			}
			s.requests.Add(1)
			if err == nil {
				if value, _, _ := unstructured.NestedString(got.Object, "spec", r.field); value != "blue" {
					err = fmt.Errorf("spec.%s is %q, not the default blue", r.field, value)
				}
			}
			if err != nil {
				s.failed(t, r.what, err)
				break // the reads of a Widget not created fail too
			}
			s.succeeded.Add(1)
		}
	}
}

// failed counts and logs a failed client request.
func (s *rotationSoak) failed(t *testing.T, what string, err error) {
	s.failures.Add(1)
	t.Logf("FAILED at %s, during %q: %s: %v", time.Now().UTC().Format("15:04:05.000"), *s.phase.Load(), what, err)
}

// waitRequests waits until the clients have made n more requests that
// succeeded.
func (s *rotationSoak) waitRequests(t *testing.T, n int64) {
	t.Helper()
	want := s.succeeded.Load() + n
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), pollEvery, waitTimeout, true, func(context.Context) (bool, error) {
		return s.succeeded.Load() >= want, nil
	}), "%d more client requests succeed", n)
}

// secret is the replicas' Secret.
func (s *rotationSoak) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	secret, err := s.env.kube.CoreV1().Secrets("default").Get(t.Context(), managedSecret, metav1.GetOptions{})
	require.NoError(t, err)
	return secret
}

// editSecret changes the Secret with edit, as an operator would, read
// again if a replica wrote it meanwhile.
func (s *rotationSoak) editSecret(t *testing.T, edit func(*corev1.Secret)) {
	t.Helper()
	secrets := s.env.kube.CoreV1().Secrets("default")
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		secret, err := secrets.Get(t.Context(), managedSecret, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(secret)
		_, err = secrets.Update(t.Context(), secret, metav1.UpdateOptions{})
		return err
	}))
}

// signingCA is the CA of the Secret that signs, the first of its ca.crt.
func signingCA(t *testing.T, secret *corev1.Secret) *x509.Certificate {
	t.Helper()
	cas := certificates(secret.Data[webhook.SecretCAKey])
	require.NotEmpty(t, cas, "the Secret has a CA")
	return cas[0]
}

// certificates are the certificates of the PEM blocks of data.
func certificates(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		if block, data = pem.Decode(data); block == nil {
			return out
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// waitConverged waits until the replicas have converged (see converged)
// on a CA that want accepts, then checks that every CA they served before
// is still in every caBundle, and records the CA.
func (s *rotationSoak) waitConverged(t *testing.T, want func(*x509.Certificate) bool) {
	t.Helper()
	var ca *x509.Certificate
	var bundles map[string][]byte
	var why string
	err := wait.PollUntilContextTimeout(t.Context(), pollEvery, waitTimeout, true, func(ctx context.Context) (bool, error) {
		ca, bundles, why = s.converged(ctx, want)
		return why == "", nil
	})
	require.NoError(t, err, "the replicas converge: %s", why)
	for _, old := range s.served {
		for desc, bundle := range bundles {
			assert.True(t, slices.ContainsFunc(certificates(bundle), old.Equal),
				"the caBundle of %s keeps the CA %s served before", desc, old.SerialNumber)
		}
	}
	if !slices.ContainsFunc(s.served, ca.Equal) {
		s.served = append(s.served, ca)
	}
}

// converged tells why the replicas have not converged, or "" if they
// have: the CA of the Secret (the first of its ca.crt) is one that want
// accepts, and signs its serving certificate; both replicas serve that
// certificate and are Ready; and a TLS client that trusts only the
// caBundle of one of the named objects that exist, whichever, connects to
// each replica. It returns that CA and the caBundles by object.
func (s *rotationSoak) converged(ctx context.Context, want func(*x509.Certificate) bool) (*x509.Certificate, map[string][]byte, string) {
	secret, err := s.env.kube.CoreV1().Secrets("default").Get(ctx, managedSecret, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Sprintf("reading the Secret: %v", err)
	}
	cas := certificates(secret.Data[webhook.SecretCAKey])
	leaves := certificates(secret.Data[corev1.TLSCertKey])
	switch {
	case len(cas) == 0 || len(leaves) == 0:
		return nil, nil, "the Secret lacks a CA or a serving certificate"
	case !want(cas[0]):
		return nil, nil, fmt.Sprintf("the Secret's CA %s is not the one the step leads to", cas[0].SerialNumber)
	case leaves[0].CheckSignatureFrom(cas[0]) != nil:
		return nil, nil, "the Secret's serving certificate is not signed by its CA"
	}
	leaf := leaves[0]
	for i, r := range s.replicas {
		served, err := r.certs.GetCertificate(nil)
		if err != nil {
			return nil, nil, fmt.Sprintf("replica %d: %v", i, err)
		}
		if !bytes.Equal(served.Certificate[0], leaf.Raw) {
			return nil, nil, fmt.Sprintf("replica %d does not serve the Secret's certificate yet", i)
		}
		if err := r.certs.Ready(); err != nil {
			return nil, nil, fmt.Sprintf("replica %d is not Ready: %v", i, err)
		}
	}
	bundles, err := s.bundles(ctx)
	if err != nil {
		return nil, nil, err.Error()
	}
	for desc, bundle := range bundles {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(bundle) {
			return nil, nil, fmt.Sprintf("the caBundle of %s holds no certificate", desc)
		}
		for i, r := range s.replicas {
			if err := handshake(ctx, r.addr, pool, leaf); err != nil {
				return nil, nil, fmt.Sprintf("replica %d with the caBundle of %s: %v", i, desc, err)
			}
		}
	}
	return cas[0], bundles, ""
}

// bundles are the caBundles of the objects the replicas name that exist,
// by kind, name and webhook.
func (s *rotationSoak) bundles(ctx context.Context) (map[string][]byte, error) {
	out := map[string][]byte{}
	admission := s.env.kube.AdmissionregistrationV1()
	mutating, err := admission.MutatingWebhookConfigurations().Get(ctx, "widgets", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the MutatingWebhookConfiguration: %w", err)
	}
	for _, w := range mutating.Webhooks {
		out["MutatingWebhookConfiguration widgets, webhook "+w.Name] = w.ClientConfig.CABundle
	}
	for _, name := range []string{"widgets", "configmaps"} {
		validating, err := admission.ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the ValidatingWebhookConfiguration %s: %w", name, err)
		}
		for _, w := range validating.Webhooks {
			out["ValidatingWebhookConfiguration "+name+", webhook "+w.Name] = w.ClientConfig.CABundle
		}
	}
	crd, err := s.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets."+widgetGroup, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the CRD: %w", err)
	}
	out["CustomResourceDefinition widgets."+widgetGroup] = crd.Spec.Conversion.Webhook.ClientConfig.CABundle
	return out, nil
}

// handshake connects to addr over TLS, trusting pool, and checks that it
// serves leaf.
func handshake(ctx context.Context, addr string, pool *x509.CertPool, leaf *x509.Certificate) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	dialer := &tls.Dialer{Config: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	tlsConn, ok := conn.(*tls.Conn)
	if !ok {
		return errors.New("not a TLS connection")
	}
	if !bytes.Equal(tlsConn.ConnectionState().PeerCertificates[0].Raw, leaf.Raw) {
		return errors.New("it serves another certificate")
	}
	return nil
}

// operatorIssued is what an operator puts in the Secret to replace the CA:
// a new CA, valid for a year, alone in ca.crt, its key, and a serving
// certificate for 127.0.0.1 it signed, valid for a month.
func operatorIssued(t *testing.T) (map[string][]byte, *x509.Certificate) {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "operator's webhook CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	leafDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano() + 1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(30 * 24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	block := func(kind string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}) }
	return map[string][]byte{
		webhook.SecretCAKey:     block("CERTIFICATE", caDER),
		webhook.SecretCAKeyPK:   block("EC PRIVATE KEY", caKeyDER),
		corev1.TLSCertKey:       block("CERTIFICATE", leafDER),
		corev1.TLSPrivateKeyKey: block("EC PRIVATE KEY", keyDER),
	}, ca
}
