package webhook

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// The keys of a ManagedCertificates Secret: the serving pair as in a
// kubernetes.io/tls Secret, and the CA that signs it.
const (
	SecretCAKey   = "ca.crt"
	SecretCAKeyPK = "ca.key"
)

// Defaults of ManagedConfig.
const (
	DefaultValidity = 90 * 24 * time.Hour
	DefaultCheck    = time.Minute
)

// CABundles names the objects whose webhooks' caBundle ManagedCertificates
// keeps current with its CA.
type CABundles struct {
	// MutatingWebhookConfigurations and ValidatingWebhookConfigurations
	// name the configurations whose webhooks get the CA as their caBundle.
	MutatingWebhookConfigurations, ValidatingWebhookConfigurations []string
	// CRDs name the CustomResourceDefinitions whose conversion webhook
	// gets the CA as its caBundle.
	CRDs []string
}

// ManagedConfig says where ManagedCertificates keeps the certificates it
// issues and where it publishes its CA.
type ManagedConfig struct {
	// Client reads and writes the Secret and the webhook configurations.
	Client kubernetes.Interface
	// Dynamic patches the CRDs of CRDs; needed only if there are some.
	Dynamic dynamic.Interface
	// Namespace and Name are the Secret's.
	Namespace, Name string
	// DNSNames and IPAddresses are what the serving certificate is valid
	// for: the names of the webhook Service, such as
	// "foo-webhook.foo-system.svc", or an address the API server calls.
	DNSNames    []string
	IPAddresses []net.IP
	// CABundles names the objects that get the CA as their caBundle.
	CABundles
	// Validity is how long a serving certificate is valid, DefaultValidity
	// if zero; it is renewed when a third of it is left. The CA is valid
	// ten times as long and renewed the same way, its successor published
	// beside it until it has signed the serving certificate.
	Validity time.Duration
	// Check is how often the Secret and the caBundles are looked at,
	// DefaultCheck if zero: how soon a replica serves a certificate another
	// one renewed, and restores a caBundle someone changed.
	Check time.Duration
}

// ManagedCertificates issues the webhooks' serving certificate itself: a
// CA and a serving certificate signed by it, kept in a Secret that every
// replica shares, renewed before they expire, with the CA kept as the
// caBundle of the webhook configurations and CRDs it names. Replicas may
// run it at once, with or without leader election: the Secret is created
// and renewed with optimistic concurrency, so one replica's certificate
// wins and the others load it. Its Run, which Server.Run calls, does the
// work; until its first pass a Server has no certificate and is not Ready.
type ManagedCertificates struct {
	cfg  ManagedConfig
	cert atomic.Pointer[tls.Certificate]
	now  func() time.Time
	// pending is a certificate of a new CA that waits a pass to be served.
	pending []byte
}

// NewManagedCertificates checks cfg and returns certificates that Run
// keeps current.
func NewManagedCertificates(cfg ManagedConfig) (*ManagedCertificates, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, errors.New("no client"))
	}
	if cfg.Namespace == "" || cfg.Name == "" {
		errs = append(errs, errors.New("no Secret namespace and name"))
	}
	if len(cfg.DNSNames) == 0 && len(cfg.IPAddresses) == 0 {
		errs = append(errs, errors.New("no DNS name or IP address to issue the certificate for"))
	}
	if len(cfg.CRDs) > 0 && cfg.Dynamic == nil {
		errs = append(errs, errors.New("CRDs need the Dynamic client"))
	}
	if cfg.Validity < 0 || cfg.Check < 0 {
		errs = append(errs, errors.New("negative Validity or Check"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("webhook: NewManagedCertificates: %w", err)
	}
	if cfg.Validity == 0 {
		cfg.Validity = DefaultValidity
	}
	if cfg.Check == 0 {
		cfg.Check = DefaultCheck
	}
	return &ManagedCertificates{cfg: cfg, now: time.Now}, nil
}

// GetCertificate returns the serving certificate last loaded, nil before
// the first.
func (m *ManagedCertificates) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := m.cert.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("the managed certificate is not loaded yet")
}

// Run makes sure the Secret holds a valid pair and the caBundles its CA,
// then does so again every Check until ctx ends. A pass that fails is
// logged and retried at the next; Run returns nil when ctx ends.
func (m *ManagedCertificates) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("secret", m.cfg.Namespace+"/"+m.cfg.Name)
	ctx = klog.NewContext(ctx, logger)
	t := time.NewTicker(m.cfg.Check)
	defer t.Stop()
	for {
		if err := m.sync(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Keeping the webhook certificate current")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// sync is one pass of Run.
func (m *ManagedCertificates) sync(ctx context.Context) error {
	secret, err := m.ensureSecret(ctx)
	if err != nil {
		return err
	}
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Errorf("loading the serving pair of the Secret: %w", err)
	}
	old := m.cert.Load()
	if old == nil {
		m.serve(ctx, &pair)
		return m.publish(ctx, secret.Data[SecretCAKey])
	}
	if err := m.publish(ctx, secret.Data[SecretCAKey]); err != nil {
		return err
	}
	if !bytes.Equal(leafOf(old).AuthorityKeyId, leafOf(&pair).AuthorityKeyId) && !bytes.Equal(m.pending, pair.Certificate[0]) {
		// Signed by a new CA: served from the next pass on, once the API
		// server has had the time to trust the CA just published.
		m.pending = pair.Certificate[0]
		return nil
	}
	m.serve(ctx, &pair)
	return nil
}

// serve serves pair from the next handshake on.
func (m *ManagedCertificates) serve(ctx context.Context, pair *tls.Certificate) {
	if old := m.cert.Load(); old == nil || !bytes.Equal(old.Certificate[0], pair.Certificate[0]) {
		klog.FromContext(ctx).Info("Serving a webhook certificate", "notAfter", leafOf(pair).NotAfter.UTC())
	}
	m.cert.Store(pair)
	m.pending = nil
}

// ensureSecret returns the Secret once it holds a pair that does not need
// renewing, creating or renewing it if needed; a conflict with another
// replica's write means reading the Secret again.
func (m *ManagedCertificates) ensureSecret(ctx context.Context) (*corev1.Secret, error) {
	secrets := m.cfg.Client.CoreV1().Secrets(m.cfg.Namespace)
	for range 5 {
		secret, err := secrets.Get(ctx, m.cfg.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			data, err := m.issue(nil)
			if err != nil {
				return nil, err
			}
			secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.cfg.Namespace, Name: m.cfg.Name},
				Type: corev1.SecretTypeTLS, Data: data}
			created, err := secrets.Create(ctx, secret, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err == nil {
				klog.FromContext(ctx).Info("Created the webhook certificate Secret")
			}
			return created, err
		case err != nil:
			return nil, fmt.Errorf("reading the certificate Secret: %w", err)
		}
		if !m.needsRenewal(secret.Data) {
			return secret, nil
		}
		data, err := m.issue(secret.Data)
		if err != nil {
			return nil, err
		}
		secret = secret.DeepCopy()
		secret.Data = data
		updated, err := secrets.Update(ctx, secret, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err == nil {
			klog.FromContext(ctx).Info("Renewed the webhook certificate")
		}
		return updated, err
	}
	return nil, errors.New("the certificate Secret kept changing under this replica's writes")
}

// needsRenewal tells whether data lacks a pair, a CA, or names, or holds
// one that has a third of its life or less left.
func (m *ManagedCertificates) needsRenewal(data map[string][]byte) bool {
	pair, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return true
	}
	leaf := leafOf(&pair)
	ca, _, err := parseCA(data)
	if err != nil || leaf.CheckSignatureFrom(ca) != nil {
		return true
	}
	if !slices.Equal(leaf.DNSNames, m.cfg.DNSNames) || !slices.EqualFunc(leaf.IPAddresses, m.cfg.IPAddresses, net.IP.Equal) {
		return true
	}
	return m.dueForRenewal(leaf) || m.dueForRenewal(ca)
}

// dueForRenewal tells whether c has a third of its life or less left.
func (m *ManagedCertificates) dueForRenewal(c *x509.Certificate) bool {
	life := c.NotAfter.Sub(c.NotBefore)
	return m.now().After(c.NotAfter.Add(-life / 3))
}

// issue returns the Secret's data with a new serving pair, signed by the
// CA of old if it is valid and not due for renewal, else by a new CA,
// which is published first in ca.crt, before the old one as long as that
// has not expired (a caBundle with both trusts the old pair until the new
// one is served).
func (m *ManagedCertificates) issue(old map[string][]byte) (map[string][]byte, error) {
	now := m.now()
	ca, caKey, err := parseCA(old)
	bundle := old[SecretCAKey]
	if err != nil || m.dueForRenewal(ca) {
		previous := ca
		if ca, caKey, err = newCertificate(now, 10*m.cfg.Validity, nil, nil, func(t *x509.Certificate) {
			t.Subject = pkix.Name{CommonName: m.cfg.Name + "-ca"}
			t.IsCA, t.BasicConstraintsValid = true, true
			t.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
		}); err != nil {
			return nil, err
		}
		bundle = pemOf("CERTIFICATE", ca.Raw)
		if previous != nil && now.Before(previous.NotAfter) {
			bundle = append(bundle, pemOf("CERTIFICATE", previous.Raw)...)
		}
	}
	leaf, key, err := newCertificate(now, m.cfg.Validity, ca, caKey, func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: firstName(m.cfg)}
		t.DNSNames, t.IPAddresses = m.cfg.DNSNames, m.cfg.IPAddresses
		t.KeyUsage = x509.KeyUsageDigitalSignature
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		corev1.TLSCertKey:       pemOf("CERTIFICATE", leaf.Raw),
		corev1.TLSPrivateKeyKey: pemOf("EC PRIVATE KEY", keyDER),
		SecretCAKey:             bundle,
		SecretCAKeyPK:           pemOf("EC PRIVATE KEY", caKeyDER),
	}, nil
}

func firstName(cfg ManagedConfig) string {
	if len(cfg.DNSNames) > 0 {
		return cfg.DNSNames[0]
	}
	return cfg.IPAddresses[0].String()
}

// newCertificate issues a certificate valid from a minute before now for
// validity, signed by parent (self-signed if nil), shaped by set.
func newCertificate(now time.Time, validity time.Duration, parent *x509.Certificate, parentKey *ecdsa.PrivateKey,
	set func(*x509.Certificate)) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, NotBefore: now.Add(-time.Minute), NotAfter: now.Add(validity)}
	set(tmpl)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("issuing a certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// parseCA returns the CA that signs (the first of ca.crt) and its key.
func parseCA(data map[string][]byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certBlock, _ := pem.Decode(data[SecretCAKey])
	keyBlock, _ := pem.Decode(data[SecretCAKeyPK])
	if certBlock == nil || keyBlock == nil {
		return nil, nil, errors.New("no CA")
	}
	ca, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	if !ca.IsCA || !key.PublicKey.Equal(ca.PublicKey) {
		return nil, nil, errors.New("the CA key does not match")
	}
	return ca, key, nil
}

func pemOf(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

// leafOf returns the first certificate of pair, an empty one if it does not
// parse.
func leafOf(pair *tls.Certificate) *x509.Certificate {
	leaf, err := parseLeaf(pair)
	if err != nil {
		return &x509.Certificate{}
	}
	return leaf
}

// parseLeaf returns the first certificate of pair, parsed unless it was.
func parseLeaf(pair *tls.Certificate) (*x509.Certificate, error) {
	if pair.Leaf != nil {
		return pair.Leaf, nil
	}
	return x509.ParseCertificate(pair.Certificate[0])
}

// publishIn sets bundle as the caBundle of every client config of the
// webhook configurations named names, of kind, and updates those where it
// was not.
func publishIn[C any](ctx context.Context, bundle []byte, kind string, names []string,
	get func(context.Context, string, metav1.GetOptions) (C, error),
	update func(context.Context, C, metav1.UpdateOptions) (C, error),
	clientConfigs func(C) []*admissionregistrationv1.WebhookClientConfig) []error {
	var errs []error
	for _, name := range names {
		c, err := get(ctx, name, metav1.GetOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s %s: %w", kind, name, err))
			continue
		}
		changed := false
		for _, cc := range clientConfigs(c) {
			if !bytes.Equal(cc.CABundle, bundle) {
				cc.CABundle, changed = bundle, true
			}
		}
		if changed {
			if _, err := update(ctx, c, metav1.UpdateOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("publishing the CA in %s %s: %w", kind, name, err))
			}
		}
	}
	return errs
}

// clientConfigsOf returns the client config of each webhook.
func clientConfigsOf[W any](webhooks []W, clientConfig func(*W) *admissionregistrationv1.WebhookClientConfig) []*admissionregistrationv1.WebhookClientConfig {
	out := make([]*admissionregistrationv1.WebhookClientConfig, len(webhooks))
	for i := range webhooks {
		out[i] = clientConfig(&webhooks[i])
	}
	return out
}

// crdResource is the resource of CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// publish makes bundle the caBundle of every webhook of the named
// configurations and CRDs that does not have it.
func (m *ManagedCertificates) publish(ctx context.Context, bundle []byte) error {
	admission := m.cfg.Client.AdmissionregistrationV1()
	mutating, validating := admission.MutatingWebhookConfigurations(), admission.ValidatingWebhookConfigurations()
	errs := slices.Concat(
		publishIn(ctx, bundle, "MutatingWebhookConfiguration", m.cfg.MutatingWebhookConfigurations, mutating.Get, mutating.Update,
			func(c *admissionregistrationv1.MutatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
				return clientConfigsOf(c.Webhooks, func(w *admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.WebhookClientConfig {
					return &w.ClientConfig
				})
			}),
		publishIn(ctx, bundle, "ValidatingWebhookConfiguration", m.cfg.ValidatingWebhookConfigurations, validating.Get, validating.Update,
			func(c *admissionregistrationv1.ValidatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
				return clientConfigsOf(c.Webhooks, func(w *admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.WebhookClientConfig {
					return &w.ClientConfig
				})
			}),
	)
	for _, name := range m.cfg.CRDs {
		crds := m.cfg.Dynamic.Resource(crdResource)
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("reading CustomResourceDefinition %s: %w", name, err))
			continue
		}
		current, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
		if current == base64.StdEncoding.EncodeToString(bundle) {
			continue
		}
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{"webhook": map[string]any{
			"clientConfig": map[string]any{"caBundle": bundle}}}}})
		if err != nil {
			return err
		}
		if _, err := crds.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("publishing the CA in CustomResourceDefinition %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
