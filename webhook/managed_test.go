package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
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
	"k8s.io/klog/v2"
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
	if !apierrors.IsNotFound(err) {
		require.NoError(t, err)
		for _, w := range m.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
	}
	v, err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "v", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		require.NoError(t, err)
		for _, w := range v.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
	}
	crd, err := e.dyn.Resource(crdResource).Get(ctx, "widgets.example.com", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return out
	}
	require.NoError(t, err)
	b64, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	crdBundle, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	return append(out, crdBundle)
}

// requireTrusted fails unless every caBundle of e trusts each leaf.
func (e *managedEnv) requireTrusted(t *testing.T, step string, leaves ...*x509.Certificate) {
	t.Helper()
	for i, bundle := range e.bundles(t) {
		for j, leaf := range leaves {
			require.NoError(t, trusted(leaf, bundle, "svc.ns.svc", e.now), "%s: caBundle %d trusts the certificate replica %d serves", step, i, j)
		}
	}
}

// secretLeaf is the serving certificate of the Secret.
func (e *managedEnv) secretLeaf(t *testing.T) *x509.Certificate {
	t.Helper()
	s := e.secret(t)
	pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	require.NoError(t, err)
	return leafOf(&pair)
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

	// Past two thirds of the CA's ten validities, the serving pair renewed
	// on the way.
	ca, _, err := parseCA(e.secret(t).Data)
	require.NoError(t, err)
	for !m.dueForRenewal(ca) {
		require.NoError(t, m.sync(t.Context()))
		require.NoError(t, other.sync(t.Context()))
		e.now = e.now.Add(DefaultValidity / 4)
	}
	oldLeaf := served(t, m)
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
		assert.NoError(t, served(t, m).VerifyHostname("other.ns.svc"))
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

// Regression test: a Secret deleted or whose CA no longer loads was
// replaced by a new CA published alone, while every replica still served
// a certificate of the old one.
func TestManagedCertificatesRecoveryKeepsServedCAsTrusted(t *testing.T) {
	tests := []struct {
		name string
		// breakIt breaks the Secret; the replica that recovers it is
		// fresh if fresh.
		breakIt func(*testing.T, *managedEnv)
		fresh   bool
	}{
		{name: "Secret deleted", breakIt: deleteSecret},
		{name: "Secret deleted, recreated by a new replica", breakIt: deleteSecret, fresh: true},
		{name: "CA key corrupt", breakIt: func(t *testing.T, e *managedEnv) {
			editSecret(t, e, func(s *corev1.Secret) { s.Data[SecretCAKeyPK] = []byte("garbage") })
		}},
		{name: "CA and its key corrupt, recovered by a new replica", fresh: true, breakIt: func(t *testing.T, e *managedEnv) {
			editSecret(t, e, func(s *corev1.Secret) {
				s.Data[SecretCAKey], s.Data[SecretCAKeyPK] = []byte("garbage"), []byte("garbage")
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newManagedEnv()
			m, other := e.certificates(t), e.certificates(t)
			require.NoError(t, m.sync(t.Context()))
			require.NoError(t, other.sync(t.Context()))
			oldCA := e.secret(t).Data[SecretCAKey]
			tt.breakIt(t, e)

			replicas := []*ManagedCertificates{m, other}
			recoverer := m
			if tt.fresh {
				recoverer = e.certificates(t)
				replicas = append(replicas, recoverer)
			}
			passes := []*ManagedCertificates{recoverer, m, other, m, other, m, other, recoverer}
			for i, r := range passes {
				e.now = e.now.Add(DefaultCheck)
				require.NoError(t, r.sync(t.Context()), "pass %d", i)
				var leaves []*x509.Certificate
				for _, r := range replicas {
					leaves = append(leaves, served(t, r))
				}
				e.requireTrusted(t, fmt.Sprintf("after pass %d", i), leaves...)
			}
			require.NotEqual(t, oldCA, e.secret(t).Data[SecretCAKey], "a new CA")
			for i, r := range replicas {
				assert.Equal(t, fingerprint(e.secretLeaf(t)), fingerprint(served(t, r)), "replica %d serves the new CA's pair", i)
			}

			// Once no certificate of the old CA can be served, it leaves
			// the caBundles.
			e.now = e.now.Add(DefaultValidity + 2*time.Hour)
			for i, r := range append(replicas, replicas...) {
				require.NoError(t, r.sync(t.Context()), "pass %d", i)
			}
			for i, bundle := range e.bundles(t) {
				assert.Equal(t, 1, countPEM(bundle), "caBundle %d holds the new CA alone", i)
			}
			for _, r := range replicas {
				e.requireTrusted(t, "after the old CA left", served(t, r))
			}
		})
	}
}

func deleteSecret(t *testing.T, e *managedEnv) {
	require.NoError(t, e.kube.CoreV1().Secrets("ns").Delete(t.Context(), "webhook-tls", metav1.DeleteOptions{}))
}

func editSecret(t *testing.T, e *managedEnv, edit func(*corev1.Secret)) {
	s := e.secret(t)
	edit(s)
	_, err := e.kube.CoreV1().Secrets("ns").Update(t.Context(), s, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// Regression test: one object that could not be published kept every
// replica from serving a renewed pair of the same CA.
func TestManagedCertificatesServeDespiteFailedPublish(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(*testing.T, *managedEnv)
		// forbid makes reading and writing the MutatingWebhookConfiguration
		// forbidden to the replica.
		forbid bool
		// switches tells whether a pair of a new CA is served: not while
		// an object that exists may not trust it.
		switches bool
	}{
		{name: "CRD not installed", switches: true, breakIt: func(t *testing.T, e *managedEnv) {
			require.NoError(t, e.dyn.Resource(crdResource).Delete(t.Context(), "widgets.example.com", metav1.DeleteOptions{}))
		}},
		{name: "webhook configuration removed", switches: true, breakIt: func(t *testing.T, e *managedEnv) {
			require.NoError(t, e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(t.Context(), "v", metav1.DeleteOptions{}))
		}},
		{name: "no RBAC on one object", switches: false, forbid: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newManagedEnv()
			forbidden := false
			e.kube.PrependReactor("*", "mutatingwebhookconfigurations", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if forbidden {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}, "m", nil)
				}
				return false, nil, nil
			})
			m := e.certificates(t)
			require.NoError(t, m.sync(t.Context()))
			if tt.breakIt != nil {
				tt.breakIt(t, e)
			}
			sync := func() error {
				forbidden = tt.forbid
				defer func() { forbidden = false }()
				return m.sync(t.Context())
			}

			e.now = e.now.Add(DefaultValidity * 3 / 4)
			assert.Error(t, sync(), "the object is reported")
			assert.Equal(t, fingerprint(e.secretLeaf(t)), fingerprint(served(t, m)), "the renewed pair of the same CA is served")

			editSecret(t, e, func(s *corev1.Secret) { s.Data[SecretCAKeyPK] = []byte("garbage") })
			old := served(t, m)
			for range 3 {
				e.now = e.now.Add(DefaultCheck)
				assert.Error(t, sync())
			}
			newCA := e.secret(t).Data[SecretCAKey]
			if tt.switches {
				assert.Equal(t, fingerprint(e.secretLeaf(t)), fingerprint(served(t, m)), "the new CA's pair is served")
			} else {
				assert.Equal(t, fingerprint(old), fingerprint(served(t, m)), "the new CA's pair waits until every object trusts it")
				require.NoError(t, m.Ready(), "ready with the old CA's pair")
			}
			e.requireTrusted(t, "after the new CA", served(t, m))
			v, err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), "v", metav1.GetOptions{})
			if err == nil {
				assert.Equal(t, newCA, v.Webhooks[0].ClientConfig.CABundle, "the other objects are published")
			}
			if !tt.switches {
				// Unless the pair served expires before the next pass.
				e.now = old.NotAfter.Add(-DefaultCheck / 2)
				assert.Error(t, sync())
				assert.Equal(t, fingerprint(e.secretLeaf(t)), fingerprint(served(t, m)), "the new CA's pair rather than an expired one")
				assert.ErrorContains(t, m.Ready(), "not in every caBundle")
			}
		})
	}
}

// Regression test: a replica was ready before any caBundle held its CA.
func TestManagedCertificatesNotReadyBeforePublished(t *testing.T) {
	e := newManagedEnv()
	deny := true
	e.kube.PrependReactor("update", "validatingwebhookconfigurations", func(k8stesting.Action) (bool, runtime.Object, error) {
		if deny {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}, "v", nil)
		}
		return false, nil, nil
	})
	m := e.certificates(t)
	s, err := NewServer(":0", m, Handle("/v", http404{}))
	require.NoError(t, err)
	require.Error(t, m.sync(t.Context()))
	_, err = m.GetCertificate(nil)
	require.NoError(t, err, "a certificate is served")
	assert.ErrorContains(t, s.Ready(), "ValidatingWebhookConfiguration v", "not ready while an object may not trust it")

	deny = false
	require.NoError(t, m.sync(t.Context()))
	assert.NoError(t, s.Ready())
}

// Regression test: replicas with different names (a rolling update)
// reissued the pair at every pass.
func TestManagedCertificatesReplicasWithDifferentNames(t *testing.T) {
	e := newManagedEnv()
	old := e.certificates(t)
	updated := e.certificates(t, func(c *ManagedConfig) { c.DNSNames = []string{"svc.ns.svc", "new.ns.svc"} })
	for range 4 {
		require.NoError(t, old.sync(t.Context()))
		require.NoError(t, updated.sync(t.Context()))
	}
	writes := 0
	for _, a := range e.kube.Actions() {
		if a.GetResource().Resource == "secrets" && a.GetVerb() != "get" {
			writes++
		}
	}
	assert.Equal(t, 2, writes, "created, then reissued once for both")
	leaf := served(t, old)
	assert.Equal(t, fingerprint(leaf), fingerprint(served(t, updated)))
	for _, name := range []string{"svc.ns.svc", "new.ns.svc"} {
		assert.NoError(t, leaf.VerifyHostname(name))
	}
}

// Regression test: a CRD without a conversion webhook was patched into an
// invalid one at every pass.
func TestManagedCertificatesLeavesCRDWithoutConversionWebhook(t *testing.T) {
	e := newManagedEnv()
	crds := e.dyn.Resource(crdResource)
	crd, err := crds.Get(t.Context(), "widgets.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(crd.Object, map[string]any{"strategy": "None"}, "spec", "conversion"))
	_, err = crds.Update(t.Context(), crd, metav1.UpdateOptions{})
	require.NoError(t, err)
	e.dyn.ClearActions()

	var logged []string
	ctx := klog.NewContext(t.Context(), funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{}))
	m := e.certificates(t)
	s, err := NewServer(":0", m, Handle("/v", http404{}))
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, m.sync(ctx))
	}
	for _, a := range e.dyn.Actions() {
		assert.Equal(t, "get", a.GetVerb(), "the CRD is not written: %v", a)
	}
	crd, err = crds.Get(t.Context(), "widgets.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	conversion, _, _ := unstructured.NestedMap(crd.Object, "spec", "conversion")
	assert.Equal(t, map[string]any{"strategy": "None"}, conversion)
	reported := 0
	for _, l := range logged {
		if strings.Contains(l, "widgets.example.com") {
			reported++
		}
	}
	assert.Equal(t, 1, reported, "reported once: %q", logged)
	assert.NoError(t, s.Ready(), "the other objects are published")
}
