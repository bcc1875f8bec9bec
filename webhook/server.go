package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ctrlkit/ctrlkit/metrics"
)

// Certificates gives a Server the certificate it serves, for each TLS
// handshake; a *CertFiles is one.
type Certificates interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// Server is the HTTPS server of an operator's webhooks: the handlers of
// Validating, Mutating and Conversion at their paths, behind TLS with a
// certificate from Certificates. queue/operator's WithWebhooks serves it
// beside /healthz and /metrics; its Handler and TLSConfig serve it
// anywhere else.
type Server struct {
	addr    string
	certs   Certificates
	handler http.Handler
	paths   []string
	tls     []func(*tls.Config)
}

// NewServer returns the server at addr (such as ":9443") of the webhooks
// that Handle options give, with the certificate of certs. WithMetrics
// counts their requests; WithTLSConfig changes the TLS configuration.
func NewServer(addr string, certs Certificates, opts ...Option) (*Server, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	var errs []error
	if addr == "" {
		errs = append(errs, errors.New("no address"))
	}
	if certs == nil {
		errs = append(errs, errors.New("no certificates"))
	}
	if cfg.kind != "" {
		errs = append(errs, errors.New("WithKind applies to handlers, not to a server"))
	}
	if cfg.connect {
		errs = append(errs, errors.New("WithConnect applies to Validating, not to a server"))
	}
	if len(cfg.routes) == 0 {
		errs = append(errs, errors.New("no webhook to serve: give Handle options"))
	}
	mux := http.NewServeMux()
	s := &Server{addr: addr, certs: certs, handler: mux, tls: cfg.tls}
	for _, r := range cfg.routes {
		switch {
		case !strings.HasPrefix(r.path, "/"):
			errs = append(errs, fmt.Errorf("path %q does not start with /", r.path))
			continue
		case r.handler == nil:
			errs = append(errs, fmt.Errorf("no handler for %s", r.path))
			continue
		case slices.Contains(s.paths, r.path):
			errs = append(errs, fmt.Errorf("path %s given twice", r.path))
			continue
		}
		h := r.handler
		if cfg.metrics != nil {
			h = cfg.metrics.Webhook(r.path, h)
		}
		mux.Handle("POST "+r.path, h)
		s.paths = append(s.paths, r.path)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("webhook: NewServer: %w", err)
	}
	return s, nil
}

// Handle serves h, a handler of Validating, Mutating or Conversion, at
// path (such as "/validate-foo"), the path of its webhook configuration's
// clientConfig; an option of NewServer.
func Handle(path string, h http.Handler) Option {
	return func(c *config) { c.routes = append(c.routes, route{path: path, handler: h}) }
}

// WithMetrics counts the requests of each webhook of a server in r's
// controller_runtime_webhook_* series (see metrics.Recorder.Webhook); an
// option of NewServer.
func WithMetrics(r *metrics.Recorder) Option {
	return func(c *config) {
		if r == nil {
			c.errs = append(c.errs, errors.New("WithMetrics: the recorder is nil"))
			return
		}
		c.metrics = r
	}
}

// WithTLSConfig lets configure change the server's TLS configuration, such
// as its minimum version, its cipher suites or the client certificates it
// requires (ClientAuth and ClientCAs); an option of NewServer. configure
// is called on each configuration TLSConfig returns, after the server's
// defaults are set and in the order the options are given; the server's
// GetCertificate is set again after it, so the certificate served is
// always the one Certificates gives.
func WithTLSConfig(configure func(*tls.Config)) Option {
	return func(c *config) {
		if configure == nil {
			c.errs = append(c.errs, errors.New("WithTLSConfig: the function is nil"))
			return
		}
		c.tls = append(c.tls, configure)
	}
}

// Run keeps the server's certificates current until ctx ends, for
// certificates that need it, such as ManagedCertificates, and returns nil
// then; queue/operator's WithWebhooks runs it while the server serves.
func (s *Server) Run(ctx context.Context) error {
	if r, ok := s.certs.(interface{ Run(context.Context) error }); ok {
		return r.Run(ctx)
	}
	<-ctx.Done()
	return nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.addr }

// Paths are the paths of the server's webhooks, in the order given.
func (s *Server) Paths() []string { return slices.Clone(s.paths) }

// Handler answers the requests of the server's webhooks: POST to one of
// their paths. Serve it over TLS with TLSConfig: the API server calls
// webhooks only over HTTPS.
func (s *Server) Handler() http.Handler { return s.handler }

// TLSConfig returns a new TLS configuration of the server: TLS 1.2 or
// later unless WithTLSConfig says otherwise, changed by the functions of
// WithTLSConfig, with the certificate Certificates gives for each
// handshake, so that a renewed certificate is served without a restart.
func (s *Server) TLSConfig() *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	for _, configure := range s.tls {
		configure(cfg)
	}
	cfg.GetCertificate = s.certs.GetCertificate
	return cfg
}

// Ready returns nil once the server has a certificate to serve that has
// not expired and, for certificates with a Ready method such as
// ManagedCertificates, that method returns nil; otherwise it says why
// not: an operator should not be ready, and so not be sent webhook
// requests, before.
func (s *Server) Ready() error {
	cert, err := s.certs.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		return fmt.Errorf("webhook: no certificate to serve: %w", err)
	}
	if cert == nil || len(cert.Certificate) == 0 {
		return errors.New("webhook: no certificate to serve yet")
	}
	leaf, err := parseLeaf(cert)
	if err != nil {
		return fmt.Errorf("webhook: the certificate does not parse: %w", err)
	}
	if now := time.Now(); now.After(leaf.NotAfter) {
		return fmt.Errorf("webhook: the certificate expired at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if r, ok := s.certs.(interface{ Ready() error }); ok {
		if err := r.Ready(); err != nil {
			return fmt.Errorf("webhook: %w", err)
		}
	}
	return nil
}

// certCheckInterval is how often CertFiles looks at its files.
const certCheckInterval = time.Second

// CertFiles is the certificate and key of two PEM files, such as tls.crt
// and tls.key of a Secret that cert-manager keeps renewed and the kubelet
// mounts: when either file changes (by its modification time or size,
// checked at most once a second, at a handshake), both are read again, and
// the new pair is served from the next handshake on. A pair that does not
// load, such as a certificate already replaced and its key not yet, leaves
// the last good pair in service and is read again at the next check.
type CertFiles struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string
	checked time.Time
	lastErr error
}

// NewCertFiles reads the certificate in certFile and its key in keyFile,
// and fails if they do not load as a pair.
func NewCertFiles(certFile, keyFile string) (*CertFiles, error) {
	c := &CertFiles{certFile: certFile, keyFile: keyFile}
	stamp, err := c.stampNow()
	if err == nil {
		err = c.load(stamp)
	}
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	c.checked = time.Now()
	return c, nil
}

// GetCertificate returns the pair last loaded, reloading it first if the
// files changed since.
func (c *CertFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.checked) >= certCheckInterval {
		c.checked = now
		if stamp, err := c.stampNow(); err != nil {
			c.lastErr = err
		} else if stamp != c.stamp {
			c.lastErr = c.load(stamp)
		}
	}
	return c.cert, nil
}

// Err is the error of the last reload that failed and has not been
// followed by a good one: the files have changed, and the pair served is
// older than they are.
func (c *CertFiles) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// stampNow identifies the files' current contents by their modification
// times and sizes.
func (c *CertFiles) stampNow() (string, error) {
	var parts []string
	for _, f := range []string{c.certFile, c.keyFile} {
		info, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%d/%d", info.ModTime().UnixNano(), info.Size()))
	}
	return strings.Join(parts, " "), nil
}

// load reads the pair and, if it loads, serves it from now on.
func (c *CertFiles) load(stamp string) error {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("loading the certificate %s and key %s: %w", c.certFile, c.keyFile, err)
	}
	c.cert, c.stamp = &cert, stamp
	return nil
}
