package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// managedEnv is a fake cluster with the objects ManagedCertificates
// publishes its CA in.
type managedEnv struct {
	kube *fake.Clientset
	dyn  *dynamicfake.FakeDynamicClient
	now  time.Time
}

func newManagedEnv() *managedEnv {
	hook := func(name string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: name}}
	}
	kube := fake.NewClientset(
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "a.example.com", ClientConfig: hook("svc")}, {Name: "b.example.com", ClientConfig: hook("svc")}}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "c.example.com", ClientConfig: hook("svc")}}},
	)
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{"conversion": map[string]any{"strategy": "Webhook",
			"webhook": map[string]any{"clientConfig": map[string]any{"service": map[string]any{"namespace": "ns", "name": "svc"}}}}},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{crdResource: "CustomResourceDefinitionList"}, crd)
	return &managedEnv{kube: kube, dyn: dyn, now: time.Now()}
}

func (e *managedEnv) certificates(t *testing.T, mutate ...func(*ManagedConfig)) *ManagedCertificates {
	t.Helper()
	cfg := ManagedConfig{
		Client: e.kube, Dynamic: e.dyn, Namespace: "ns", Name: "webhook-tls",
		DNSNames: []string{"svc.ns.svc"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		CABundles: CABundles{MutatingWebhookConfigurations: []string{"m"}, ValidatingWebhookConfigurations: []string{"v"},
			CRDs: []string{"widgets.example.com"}},
	}
	for _, f := range mutate {
		f(&cfg)
	}
	m, err := NewManagedCertificates(cfg)
	require.NoError(t, err)
	m.now = func() time.Time { return e.now }
	return m
}

func (e *managedEnv) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	s, err := e.kube.CoreV1().Secrets("ns").Get(t.Context(), "webhook-tls", metav1.GetOptions{})
	require.NoError(t, err)
	return s
}

// bundles are the caBundles of every webhook and of the CRD.
func (e *managedEnv) bundles(t *testing.T) [][]byte {
	t.Helper()
	ctx := t.Context()
	var out [][]byte
	m, err := e.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "m", metav1.GetOptions{})
	require.NoError(t, err)
	for _, w := range m.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	v, err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "v", metav1.GetOptions{})
	require.NoError(t, err)
	for _, w := range v.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	crd, err := e.dyn.Resource(crdResource).Get(ctx, "widgets.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	b64, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	crdBundle, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	return append(out, crdBundle)
}

// served is the leaf m serves.
func served(t *testing.T, m *ManagedCertificates) *x509.Certificate {
	t.Helper()
	pair, err := m.GetCertificate(nil)
	require.NoError(t, err)
	return leafOf(pair)
}

// trusted verifies leaf for name against bundle.
func trusted(leaf *x509.Certificate, bundle []byte, name string, at time.Time) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: at})
	return err
}

func TestManagedCertificatesIssueAndPublish(t *testing.T) {
	e := newManagedEnv()
	m := e.certificates(t)
	_, err := m.GetCertificate(nil)
	require.Error(t, err, "nothing before the first pass")
	require.NoError(t, m.sync(t.Context()))

	secret := e.secret(t)
	assert.Equal(t, corev1.SecretTypeTLS, secret.Type)
	leaf := served(t, m)
	assert.Equal(t, []string{"svc.ns.svc"}, leaf.DNSNames)
	assert.True(t, leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")))
	assert.WithinDuration(t, e.now.Add(DefaultValidity), leaf.NotAfter, time.Minute)
	for i, bundle := range e.bundles(t) {
		assert.Equal(t, secret.Data[SecretCAKey], bundle, "caBundle %d", i)
		require.NoError(t, trusted(leaf, bundle, "svc.ns.svc", e.now), "caBundle %d trusts the served certificate", i)
	}

	// Another replica loads the same pair; a second pass writes nothing.
	other := e.certificates(t)
	e.kube.ClearActions()
	require.NoError(t, other.sync(t.Context()))
	require.NoError(t, m.sync(t.Context()))
	assert.Equal(t, leaf.Raw, served(t, other).Raw)
	for _, a := range e.kube.Actions() {
		assert.Equal(t, "get", a.GetVerb(), "nothing to write: %v", a)
	}
}

func TestManagedCertificatesRenew(t *testing.T) {
	e := newManagedEnv()
	m := e.certificates(t)
	require.NoError(t, m.sync(t.Context()))
	first := served(t, m)
	bundle := e.secret(t).Data[SecretCAKey]

	// Before two thirds of its life: kept.
	e.now = e.now.Add(DefaultValidity / 2)
	require.NoError(t, m.sync(t.Context()))
	assert.Equal(t, first.Raw, served(t, m).Raw)

	// After: a new pair from the same CA, served at once.
	e.now = e.now.Add(DefaultValidity / 4)
	require.NoError(t, m.sync(t.Context()))
	second := served(t, m)
	assert.NotEqual(t, first.Raw, second.Raw)
	assert.Equal(t, bundle, e.secret(t).Data[SecretCAKey], "the CA is kept")
	require.NoError(t, trusted(second, bundle, "svc.ns.svc", e.now))
}

func TestManagedCertificatesRenewTheCA(t *testing.T) {
	e := newManagedEnv()
	m := e.certificates(t)
	other := e.certificates(t)
	require.NoError(t, m.sync(t.Context()))
	require.NoError(t, other.sync(t.Context()))
	oldLeaf := served(t, m)

	// Past two thirds of the CA's ten validities.
	e.now = e.now.Add(7 * DefaultValidity)
	require.NoError(t, m.sync(t.Context()))
	bundle := e.secret(t).Data[SecretCAKey]
	for _, b := range e.bundles(t) {
		assert.Equal(t, bundle, b, "the new bundle is published")
	}
	newLeaf, _ := tls.X509KeyPair(e.secret(t).Data[corev1.TLSCertKey], e.secret(t).Data[corev1.TLSPrivateKeyKey])
	require.NoError(t, trusted(leafOf(&newLeaf), bundle, "svc.ns.svc", e.now), "the bundle trusts the new pair")
	assert.Equal(t, 2, countPEM(bundle), "the old CA is published beside the new one")
	assert.Equal(t, oldLeaf.Raw, served(t, m).Raw, "the new CA's pair waits a pass")

	require.NoError(t, m.sync(t.Context()))
	assert.Equal(t, leafOf(&newLeaf).Raw, served(t, m).Raw, "then it is served")
	require.NoError(t, other.sync(t.Context()))
	require.NoError(t, other.sync(t.Context()))
	assert.Equal(t, leafOf(&newLeaf).Raw, served(t, other).Raw, "and by the other replicas")
}

func countPEM(data []byte) int {
	n := 0
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return n
		}
		n++
	}
}

func TestManagedCertificatesReissue(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(*corev1.Secret)
	}{
		{name: "a corrupt pair", breakIt: func(s *corev1.Secret) { s.Data[corev1.TLSCertKey] = []byte("garbage") }},
		{name: "no CA key", breakIt: func(s *corev1.Secret) { delete(s.Data, SecretCAKeyPK) }},
		{name: "a CA that did not sign the pair", breakIt: func(s *corev1.Secret) {
			other, err := (&ManagedCertificates{cfg: ManagedConfig{Name: "x", DNSNames: []string{"x"}, Validity: time.Hour}, now: time.Now}).issue(nil)
			if err != nil {
				panic(err)
			}
			s.Data[SecretCAKey], s.Data[SecretCAKeyPK] = other[SecretCAKey], other[SecretCAKeyPK]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newManagedEnv()
			m := e.certificates(t)
			require.NoError(t, m.sync(t.Context()))
			s := e.secret(t)
			tt.breakIt(s)
			_, err := e.kube.CoreV1().Secrets("ns").Update(t.Context(), s, metav1.UpdateOptions{})
			require.NoError(t, err)
			require.NoError(t, m.sync(t.Context()))
			fixed := e.secret(t)
			assert.False(t, m.needsRenewal(fixed.Data), "a valid pair again")
		})
	}
	t.Run("new names", func(t *testing.T) {
		e := newManagedEnv()
		require.NoError(t, e.certificates(t).sync(t.Context()))
		m := e.certificates(t, func(c *ManagedConfig) { c.DNSNames = []string{"other.ns.svc"} })
		require.NoError(t, m.sync(t.Context()))
		assert.Equal(t, []string{"other.ns.svc"}, served(t, m).DNSNames)
	})
}

func TestManagedCertificatesRaceOfReplicas(t *testing.T) {
	e := newManagedEnv()
	// The first create and the first update each lose to another replica.
	creates, updates := 0, 0
	rivalData, err := e.certificates(t).issue(nil)
	require.NoError(t, err)
	e.kube.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates++
		if creates == 1 {
			rival := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "webhook-tls"}, Type: corev1.SecretTypeTLS, Data: rivalData}
			require.NoError(t, e.kube.Tracker().Add(rival))
			return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), "webhook-tls")
		}
		return false, nil, nil
	})
	m := e.certificates(t)
	require.NoError(t, m.sync(t.Context()))
	assert.Equal(t, rivalData, e.secret(t).Data, "the rival's Secret is kept")
	assert.Equal(t, rivalData[corev1.TLSCertKey], pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: served(t, m).Raw}), "and its pair served")

	e.kube.PrependReactor("update", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		updates++
		if updates == 1 {
			return true, nil, apierrors.NewConflict(corev1.Resource("secrets"), "webhook-tls", nil)
		}
		return false, nil, nil
	})
	e.now = e.now.Add(DefaultValidity)
	require.NoError(t, m.sync(t.Context()))
	assert.Equal(t, 2, updates, "retried after the conflict")
	assert.False(t, m.needsRenewal(e.secret(t).Data))
}

func TestManagedCertificatesRunServesUntilStopped(t *testing.T) {
	e := newManagedEnv()
	m := e.certificates(t, func(c *ManagedConfig) { c.Check = 10 * time.Millisecond })
	s, err := NewServer(":0", m, Handle("/v", http404{}))
	require.NoError(t, err)
	require.Error(t, s.Ready(), "not ready before the first pass")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	require.Eventually(t, func() bool { return s.Ready() == nil }, 30*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

func TestNewManagedCertificatesRefuses(t *testing.T) {
	kube := fake.NewClientset()
	tests := []struct {
		name string
		cfg  ManagedConfig
		want string
	}{
		{name: "no client", cfg: ManagedConfig{Namespace: "ns", Name: "s", DNSNames: []string{"a"}}, want: "no client"},
		{name: "no secret", cfg: ManagedConfig{Client: kube, DNSNames: []string{"a"}}, want: "no Secret"},
		{name: "no names", cfg: ManagedConfig{Client: kube, Namespace: "ns", Name: "s"}, want: "no DNS name"},
		{name: "CRDs without a dynamic client", cfg: ManagedConfig{Client: kube, Namespace: "ns", Name: "s", DNSNames: []string{"a"}, CABundles: CABundles{CRDs: []string{"c"}}}, want: "Dynamic"},
		{name: "negative validity", cfg: ManagedConfig{Client: kube, Namespace: "ns", Name: "s", DNSNames: []string{"a"}, Validity: -1}, want: "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewManagedCertificates(tt.cfg)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// http404 is a handler for servers whose requests do not matter.
type http404 struct{}

func (http404) ServeHTTP(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) }
