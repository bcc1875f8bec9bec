package webhook

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
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
	// name the configurations whose webhooks get the CA as their caBundle:
	// only the webhooks that call the operator (at a host the serving
	// certificate is made for: a url whose host is one of DNSNames or
	// IPAddresses, a service whose <name>.<namespace>.svc is one of
	// DNSNames) are read and published into; a webhook of the same
	// configuration called at another host is served by someone else and
	// keeps its caBundle.
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
	// ten times as long and renewed the same way; the old CA stays in the
	// caBundles beside its successor until no certificate it signed can
	// be served (see the package documentation). Replicas sharing a
	// Secret must have the same Validity.
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
// work; until its first pass a Server has no certificate, and until a
// pass has published the CA of that certificate in every caBundle it is
// not Ready. The package documentation says what it guarantees while
// certificates and CAs are renewed or lost.
type ManagedCertificates struct {
	cfg  ManagedConfig
	cert atomic.Pointer[tls.Certificate]
	now  func() time.Time

	// What follows is used by the passes of Run alone, one at a time,
	// except readyErr.

	// servedCA is the CA of the certificate served.
	servedCA *x509.Certificate
	// pendingCA is the CA of the Secret's pair, not the served one's, that
	// the last pass found in every caBundle: the pair is served if the
	// next pass finds it there too.
	pendingCA []byte
	// confirmed are the fingerprints of the CAs the last pass that reached
	// every object found in all their caBundles.
	confirmed map[string]bool
	// reported are the CRDs without a conversion webhook already logged.
	reported map[string]bool

	mu       sync.Mutex
	readyErr error
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
	return &ManagedCertificates{cfg: cfg, now: time.Now, reported: map[string]bool{},
		readyErr: errors.New("the CA is not published yet")}, nil
}

// GetCertificate returns the serving certificate last loaded, nil before
// the first.
func (m *ManagedCertificates) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := m.cert.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("the managed certificate is not loaded yet")
}

// Ready returns nil once a certificate is served and a pass of Run has
// found its CA in the caBundle of every named object that exists, and
// otherwise says why not; Server.Ready reports it. It stays nil while
// later passes fail to publish: the CA served is never taken out of a
// caBundle while a replica may serve a certificate it signed.
func (m *ManagedCertificates) Ready() error {
	if m.cert.Load() == nil {
		return errors.New("the managed certificate is not loaded yet")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.readyErr
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

// sync is one pass of Run: it reads the named objects, brings the Secret
// up to date (taking in the CAs their caBundles trust), publishes the
// Secret's ca.crt in each object on its own, and serves the Secret's pair
// if that is safe.
func (m *ManagedCertificates) sync(ctx context.Context) error {
	targets := m.readTargets(ctx)
	var errs []error
	var found []*x509.Certificate
	for _, t := range targets {
		if t.err != nil {
			errs = append(errs, t.err)
		}
		for _, b := range t.bundles {
			found = append(found, certificatesOf(b)...)
		}
	}
	secret, err := m.ensureSecret(ctx, found)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("loading the serving pair of the Secret: %w", err))...)
	}
	bundle := secret.Data[SecretCAKey]
	published := true
	for _, t := range targets {
		switch {
		case t.publish == nil:
			// Not read (reported above; one that does not exist is
			// called by nobody), or a CRD without a conversion webhook.
			published = published && (t.err == nil || apierrors.IsNotFound(t.err))
		default:
			if err := t.publish(ctx, bundle); err != nil {
				errs = append(errs, fmt.Errorf("publishing the CA in %s: %w", t.desc, err))
				published = false
			}
		}
	}
	if published {
		m.confirmed = map[string]bool{}
		for _, c := range certificatesOf(bundle) {
			m.confirmed[fingerprint(c)] = true
		}
	}
	m.serveFrom(ctx, &pair, certificatesOf(bundle), published)
	m.mu.Lock()
	if m.servedCA != nil && m.confirmed[fingerprint(m.servedCA)] {
		m.readyErr = nil
	} else if len(errs) > 0 {
		m.readyErr = fmt.Errorf("the CA of the served certificate is not in every caBundle yet: %w", errors.Join(errs...))
	} else if m.readyErr == nil {
		m.readyErr = errors.New("the CA of the served certificate is not in every caBundle yet")
	}
	m.mu.Unlock()
	return errors.Join(errs...)
}

// serveFrom serves pair, signed by one of cas, at once if nothing is
// served yet or it is signed by the CA served; else once two passes in a
// row found its CA in every caBundle (published), or when the certificate
// served expires before the next pass.
func (m *ManagedCertificates) serveFrom(ctx context.Context, pair *tls.Certificate, cas []*x509.Certificate, published bool) {
	leaf := leafOf(pair)
	var ca *x509.Certificate
	for _, c := range cas {
		if leaf.CheckSignatureFrom(c) == nil {
			ca = c
			break
		}
	}
	if ca == nil {
		return // ensureSecret never leaves such a pair
	}
	old := m.cert.Load()
	switch {
	case old == nil, m.servedCA != nil && bytes.Equal(m.servedCA.Raw, ca.Raw):
	case published && bytes.Equal(m.pendingCA, ca.Raw):
	case !m.now().Add(m.cfg.Check).Before(leafOf(old).NotAfter):
		klog.FromContext(ctx).Info("Serving a certificate of a CA not known to be in every caBundle: the one served expires before the next check")
	default:
		m.pendingCA = nil
		if published {
			m.pendingCA = ca.Raw
		}
		return
	}
	if old == nil || !bytes.Equal(old.Certificate[0], pair.Certificate[0]) {
		klog.FromContext(ctx).Info("Serving a webhook certificate", "notAfter", leaf.NotAfter.UTC())
	}
	m.cert.Store(pair)
	m.servedCA, m.pendingCA = ca, nil
}

// AnnotationTrustedCAs is the annotation of a ManagedCertificates Secret
// that records, for each CA of ca.crt but the first, until when a serving
// certificate it signed may be served; the CA leaves ca.crt and the
// caBundles then. Deleting it makes the CAs trusted for a further
// Validity.
const AnnotationTrustedCAs = "webhook.ctrlkit.io/trusted-cas"

// retireMargin is how long a CA stays in the caBundles after the last
// certificate it signed may have expired: room for the clocks of the
// replicas and of the API server to differ.
const retireMargin = time.Hour

// trust is the record of a CA that no longer signs: Until when a
// certificate it signed may be served; NotAfter is the CA's, after which
// the record is dropped.
type trust struct {
	Until    time.Time `json:"until"`
	NotAfter time.Time `json:"notAfter"`
}

// ensureSecret returns the Secret once it holds a pair that does not need
// renewing and the CAs to trust, creating or updating it if needed; found
// are the CAs of the caBundles. A conflict with another replica's write
// means reading the Secret again.
func (m *ManagedCertificates) ensureSecret(ctx context.Context, found []*x509.Certificate) (*corev1.Secret, error) {
	secrets := m.cfg.Client.CoreV1().Secrets(m.cfg.Namespace)
	for range 5 {
		secret, err := secrets.Get(ctx, m.cfg.Name, metav1.GetOptions{})
		notFound := apierrors.IsNotFound(err)
		switch {
		case notFound:
			secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.cfg.Namespace, Name: m.cfg.Name}, Type: corev1.SecretTypeTLS}
		case err != nil:
			return nil, fmt.Errorf("reading the certificate Secret: %w", err)
		}
		data, records, err := m.renew(secret, found)
		if err != nil {
			return nil, err
		}
		if !notFound && maps.EqualFunc(data, secret.Data, bytes.Equal) && records == secret.Annotations[AnnotationTrustedCAs] {
			return secret, nil
		}
		secret = secret.DeepCopy()
		secret.Data = data
		if records == "" {
			delete(secret.Annotations, AnnotationTrustedCAs)
		} else {
			metav1.SetMetaDataAnnotation(&secret.ObjectMeta, AnnotationTrustedCAs, records)
		}
		if notFound {
			created, err := secrets.Create(ctx, secret, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("creating the certificate Secret: %w", err)
			}
			klog.FromContext(ctx).Info("Created the webhook certificate Secret")
			return created, nil
		}
		updated, err := secrets.Update(ctx, secret, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("updating the certificate Secret: %w", err)
		}
		klog.FromContext(ctx).Info("Updated the webhook certificate Secret")
		return updated, nil
	}
	return nil, errors.New("the certificate Secret kept changing under this replica's writes")
}

// needsRenewal tells whether data lacks a pair, a CA that signed it, or
// one of this replica's names, or holds a pair or CA that has a third of
// its life or less left.
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
	return !m.covers(leaf) || m.dueForRenewal(leaf) || m.dueForRenewal(ca)
}

// covers tells whether leaf is valid for each of this replica's names.
func (m *ManagedCertificates) covers(leaf *x509.Certificate) bool {
	for _, n := range m.cfg.DNSNames {
		if !slices.Contains(leaf.DNSNames, n) {
			return false
		}
	}
	for _, ip := range m.cfg.IPAddresses {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// dueForRenewal tells whether c has a third of its life or less left.
func (m *ManagedCertificates) dueForRenewal(c *x509.Certificate) bool {
	life := c.NotAfter.Sub(c.NotBefore)
	return m.now().After(c.NotAfter.Add(-life / 3))
}

// issue returns data renewed as a pass would, without CAs found elsewhere.
func (m *ManagedCertificates) issue(old map[string][]byte) (map[string][]byte, error) {
	data, _, err := m.renew(&corev1.Secret{Data: old}, nil)
	return data, err
}

// renew returns what the Secret should hold: its data, with a new pair if
// it needs one, signed by the CA of secret if that is valid and not due
// for renewal, else by a new CA; and the records of the CAs trusted
// beside it (AnnotationTrustedCAs), empty if none. ca.crt holds the CA
// that signs first, then each CA that an old ca.crt, the certificate this
// replica serves or found name, until its record expires.
func (m *ManagedCertificates) renew(secret *corev1.Secret, found []*x509.Certificate) (map[string][]byte, string, error) {
	now := m.now()
	old := secret.Data
	records := map[string]trust{}
	if v := secret.Annotations[AnnotationTrustedCAs]; v != "" {
		if err := json.Unmarshal([]byte(v), &records); err != nil {
			records = map[string]trust{} // each CA trusted for a Validity from now
		}
	}
	ca, caKey, err := parseCA(old)
	newCA := err != nil || m.dueForRenewal(ca)
	if newCA {
		if ca, caKey, err = newCertificate(now, 10*m.cfg.Validity, nil, nil, func(t *x509.Certificate) {
			t.Subject = pkix.Name{CommonName: m.cfg.Name + "-ca"}
			t.IsCA, t.BasicConstraintsValid = true, true
			t.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
		}); err != nil {
			return nil, "", err
		}
	}
	delete(records, fingerprint(ca))

	// The CAs trusted beside it, and until when.
	bundle := pemOf("CERTIFICATE", ca.Raw)
	seen := map[string]bool{fingerprint(ca): true}
	candidates := certificatesOf(old[SecretCAKey])
	if m.servedCA != nil {
		candidates = append(candidates, m.servedCA)
	}
	for _, c := range append(candidates, found...) {
		fp := fingerprint(c)
		if !c.IsCA || seen[fp] || !now.Before(c.NotAfter) {
			continue
		}
		seen[fp] = true
		r, ok := records[fp]
		if !ok {
			r = trust{Until: now.Add(m.cfg.Validity + retireMargin).UTC(), NotAfter: c.NotAfter.UTC()}
		}
		if served := m.cert.Load(); m.servedCA != nil && fp == fingerprint(m.servedCA) && served != nil {
			if until := leafOf(served).NotAfter.Add(retireMargin).UTC(); now.Before(leafOf(served).NotAfter) && until.After(r.Until) {
				r.Until = until
			}
		}
		records[fp] = r
		if now.Before(r.Until) {
			bundle = append(bundle, pemOf("CERTIFICATE", c.Raw)...)
		}
	}
	maps.DeleteFunc(records, func(_ string, r trust) bool { return !now.Before(r.NotAfter) })
	recordsJSON := ""
	if len(records) > 0 {
		b, err := json.Marshal(records)
		if err != nil {
			return nil, "", err
		}
		recordsJSON = string(b)
	}

	data := map[string][]byte{}
	maps.Copy(data, old)
	data[SecretCAKey] = bundle
	if !newCA && !m.needsRenewal(old) {
		return data, recordsJSON, nil
	}
	names, ips := m.cfg.DNSNames, m.cfg.IPAddresses
	if pair, err := tls.X509KeyPair(old[corev1.TLSCertKey], old[corev1.TLSPrivateKeyKey]); err == nil && !newCA {
		// A pair valid but for a name: issued for its names and this
		// replica's, so that replicas with different names converge.
		if leaf := leafOf(&pair); leaf.CheckSignatureFrom(ca) == nil && !m.dueForRenewal(leaf) {
			names = append(slices.Clone(names), slices.DeleteFunc(slices.Clone(leaf.DNSNames), func(n string) bool { return slices.Contains(names, n) })...)
			ips = append(slices.Clone(ips), slices.DeleteFunc(slices.Clone(leaf.IPAddresses), func(ip net.IP) bool { return slices.ContainsFunc(ips, ip.Equal) })...)
		}
	}
	leaf, key, err := newCertificate(now, m.cfg.Validity, ca, caKey, func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: firstName(m.cfg)}
		t.DNSNames, t.IPAddresses = names, ips
		t.KeyUsage = x509.KeyUsageDigitalSignature
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
	if err != nil {
		return nil, "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, "", err
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return nil, "", err
	}
	data[corev1.TLSCertKey] = pemOf("CERTIFICATE", leaf.Raw)
	data[corev1.TLSPrivateKeyKey] = pemOf("EC PRIVATE KEY", keyDER)
	data[SecretCAKeyPK] = pemOf("EC PRIVATE KEY", caKeyDER)
	return data, recordsJSON, nil
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

// certificatesOf returns the certificates of the PEM blocks of data that
// parse.
func certificatesOf(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return out
		}
		if c, err := x509.ParseCertificate(block.Bytes); block.Type == "CERTIFICATE" && err == nil {
			out = append(out, c)
		}
	}
}

// fingerprint is the SHA-256 of c, in hex.
func fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
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

// target is an object named in CABundles as a pass read it.
type target struct {
	// desc is its kind and name.
	desc string
	// err is why it could not be read, if it could not.
	err error
	// bundles are its caBundles.
	bundles [][]byte
	// publish makes bundle its caBundles; nil if there is nothing to
	// publish in it.
	publish func(ctx context.Context, bundle []byte) error
}

// crdResource is the resource of CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// readTargets reads every object named in CABundles.
func (m *ManagedCertificates) readTargets(ctx context.Context) []*target {
	admission := m.cfg.Client.AdmissionregistrationV1()
	mutating, validating := admission.MutatingWebhookConfigurations(), admission.ValidatingWebhookConfigurations()
	var out []*target
	for _, name := range m.cfg.MutatingWebhookConfigurations {
		out = append(out, configTarget(ctx, "MutatingWebhookConfiguration", name, m.calledAtOurs, mutating.Get, mutating.Update,
			func(c *admissionregistrationv1.MutatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
				return clientConfigsOf(c.Webhooks, func(w *admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.WebhookClientConfig {
					return &w.ClientConfig
				})
			}))
	}
	for _, name := range m.cfg.ValidatingWebhookConfigurations {
		out = append(out, configTarget(ctx, "ValidatingWebhookConfiguration", name, m.calledAtOurs, validating.Get, validating.Update,
			func(c *admissionregistrationv1.ValidatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
				return clientConfigsOf(c.Webhooks, func(w *admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.WebhookClientConfig {
					return &w.ClientConfig
				})
			}))
	}
	for _, name := range m.cfg.CRDs {
		out = append(out, m.crdTarget(ctx, name))
	}
	return out
}

// configTarget reads the webhook configuration name, of kind; its publish
// sets the caBundle of every client config that ours accepts and that
// lacks it, and updates the configuration if one did. Another client
// config (a URL of another server) is neither read (its CAs are not the
// operator's) nor published into.
func configTarget[C any](ctx context.Context, kind, name string,
	ours func(*admissionregistrationv1.WebhookClientConfig) bool,
	get func(context.Context, string, metav1.GetOptions) (C, error),
	update func(context.Context, C, metav1.UpdateOptions) (C, error),
	clientConfigs func(C) []*admissionregistrationv1.WebhookClientConfig) *target {
	t := &target{desc: kind + " " + name}
	c, err := get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.err = fmt.Errorf("reading %s: %w", t.desc, err)
		return t
	}
	var ccs []*admissionregistrationv1.WebhookClientConfig
	for _, cc := range clientConfigs(c) {
		if ours(cc) {
			ccs = append(ccs, cc)
		}
	}
	for _, cc := range ccs {
		t.bundles = append(t.bundles, cc.CABundle)
	}
	t.publish = func(ctx context.Context, bundle []byte) error {
		changed := false
		for _, cc := range ccs {
			if !bytes.Equal(cc.CABundle, bundle) {
				cc.CABundle, changed = bundle, true
			}
		}
		if !changed {
			return nil
		}
		_, err := update(ctx, c, metav1.UpdateOptions{})
		return err
	}
	return t
}

// calledAtOurs reports whether cc calls the operator's server: at a host
// the serving certificate is made for (DNSNames, IPAddresses), the host of
// its URL or, for a Service, <name>.<namespace>.svc, where the API server
// calls a Service. A webhook called at any other host is another server's,
// whose CA it keeps.
func (m *ManagedCertificates) calledAtOurs(cc *admissionregistrationv1.WebhookClientConfig) bool {
	if cc.URL == nil {
		return cc.Service != nil && m.certifies(cc.Service.Name+"."+cc.Service.Namespace+".svc")
	}
	u, err := url.Parse(*cc.URL)
	if err != nil {
		return false
	}
	return m.certifies(u.Hostname())
}

// certifies reports whether the serving certificate is valid for host: an
// IP address among IPAddresses, or a name among DNSNames, a wildcard
// ("*.foo-system.svc") covering its first label.
func (m *ManagedCertificates) certifies(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return slices.ContainsFunc(m.cfg.IPAddresses, ip.Equal)
	}
	return slices.ContainsFunc(m.cfg.DNSNames, func(n string) bool {
		if strings.EqualFold(n, host) {
			return true
		}
		wild, ok := strings.CutPrefix(n, "*.")
		_, rest, dotted := strings.Cut(host, ".")
		return ok && dotted && strings.EqualFold(wild, rest)
	})
}

// clientConfigsOf returns the client config of each webhook.
func clientConfigsOf[W any](webhooks []W, clientConfig func(*W) *admissionregistrationv1.WebhookClientConfig) []*admissionregistrationv1.WebhookClientConfig {
	out := make([]*admissionregistrationv1.WebhookClientConfig, len(webhooks))
	for i := range webhooks {
		out[i] = clientConfig(&webhooks[i])
	}
	return out
}

// crdTarget reads the CRD name. Its publish patches the caBundle of its
// conversion webhook, at the resourceVersion read; a CRD whose conversion
// strategy is not Webhook has nothing to publish and is logged once, as
// setting a caBundle would make it invalid.
func (m *ManagedCertificates) crdTarget(ctx context.Context, name string) *target {
	t := &target{desc: "CustomResourceDefinition " + name}
	crds := m.cfg.Dynamic.Resource(crdResource)
	crd, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.err = fmt.Errorf("reading %s: %w", t.desc, err)
		return t
	}
	if strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy"); strategy != "Webhook" {
		if !m.reported[name] {
			m.reported[name] = true
			klog.FromContext(ctx).Error(nil, "Not publishing the webhook CA in a CustomResourceDefinition without a conversion webhook",
				"customResourceDefinition", name, "strategy", strategy)
		}
		return t
	}
	delete(m.reported, name)
	b64, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	current, err := base64.StdEncoding.DecodeString(b64)
	if err == nil {
		t.bundles = [][]byte{current}
	}
	t.publish = func(ctx context.Context, bundle []byte) error {
		if bytes.Equal(current, bundle) {
			return nil
		}
		patch := map[string]any{"spec": map[string]any{"conversion": map[string]any{"webhook": map[string]any{
			"clientConfig": map[string]any{"caBundle": bundle}}}}}
		if rv := crd.GetResourceVersion(); rv != "" {
			patch["metadata"] = map[string]any{"resourceVersion": rv}
		}
		data, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		_, err = crds.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
		return err
	}
	return t
}
