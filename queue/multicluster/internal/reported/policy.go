package reported

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ErrNotAllowed is wrapped by the errors of a kubeconfig refused because
// it asks for what its Policy does not allow.
var ErrNotAllowed = errors.New("not allowed")

// Policy says what a member's kubeconfig may ask of the operator beyond
// reaching its server over verified TLS with credentials it holds itself:
// running a command (an exec or auth provider plugin), reading a file of
// the operator's (a token, certificate, key or certificate authority
// named by its path) or turning off TLS verification. The zero Policy
// allows none of them.
type Policy struct {
	// ExecCommands are the exec plugins a kubeconfig's user may name, by
	// their command exactly as the kubeconfig writes it.
	ExecCommands []string
	// AuthProviders are the auth provider plugins a kubeconfig's user
	// may name, by name.
	AuthProviders []string
	// Files are the files a kubeconfig may name, by absolute path.
	Files []string
	// InsecureTLS allows insecure-skip-tls-verify and servers reached
	// without TLS.
	InsecureTLS bool
}

// Validate returns an error if p cannot be applied: an empty name or a
// file path that is not absolute.
func (p Policy) Validate() error {
	var errs []error
	if slices.Contains(p.ExecCommands, "") {
		errs = append(errs, errors.New("an allowed exec command is empty"))
	}
	if slices.Contains(p.AuthProviders, "") {
		errs = append(errs, errors.New("an allowed auth provider is empty"))
	}
	for _, f := range p.Files {
		if !filepath.IsAbs(f) {
			errs = append(errs, fmt.Errorf("allowed file %q is not an absolute path", f))
		}
	}
	return errors.Join(errs...)
}

// Config returns the config of kubeconfig. A kubeconfig that cannot be
// read is an error that says what is wrong, by line, field or name, never
// with what the kubeconfig holds (client-go's decoding errors print its
// credentials); one that any of its users or clusters makes ask for
// what p does not allow is an error wrapping ErrNotAllowed. The
// kubeconfig is checked before client-go makes the config of it, since
// client-go reads the files a kubeconfig names while it does.
func (p Policy) Config(kubeconfig []byte) (*rest.Config, error) {
	if len(kubeconfig) == 0 {
		return nil, errors.New("the kubeconfig is empty")
	}
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		// Not client-go's error: it may print the credentials.
		return nil, unreadable(kubeconfig)
	}
	if err := p.checkKubeconfig(raw); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		// client-go's validation names users, clusters and files, and
		// the URLs it cannot parse, with their user info.
		return nil, fmt.Errorf("%s: %s", errUnreadable, redactURLs(err.Error()))
	}
	cluster := ""
	if c := raw.Contexts[raw.CurrentContext]; c != nil {
		cluster = c.Cluster
	}
	if err := p.Check(cluster, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// checkKubeconfig refuses what a kubeconfig's users and clusters ask for
// that p does not allow, whether the current context uses them or not.
func (p Policy) checkKubeconfig(raw *clientcmdapi.Config) error {
	var errs []error
	for _, name := range sortedKeys(raw.AuthInfos) {
		u := raw.AuthInfos[name]
		if u == nil {
			continue
		}
		if u.Exec != nil && !slices.Contains(p.ExecCommands, u.Exec.Command) {
			errs = append(errs, fmt.Errorf("user %q: exec plugin %q: %w", name, u.Exec.Command, ErrNotAllowed))
		}
		if u.AuthProvider != nil && !slices.Contains(p.AuthProviders, u.AuthProvider.Name) {
			errs = append(errs, fmt.Errorf("user %q: auth provider %q: %w", name, u.AuthProvider.Name, ErrNotAllowed))
		}
		errs = append(errs, p.checkFiles("user "+fmt.Sprintf("%q", name), "tokenFile", u.TokenFile, "client-certificate", u.ClientCertificate, "client-key", u.ClientKey)...)
	}
	for _, name := range sortedKeys(raw.Clusters) {
		c := raw.Clusters[name]
		if c == nil {
			continue
		}
		errs = append(errs, p.checkFiles("cluster "+fmt.Sprintf("%q", name), "certificate-authority", c.CertificateAuthority)...)
		if c.InsecureSkipTLSVerify && !p.InsecureTLS {
			errs = append(errs, fmt.Errorf("cluster %q: insecure-skip-tls-verify: %w", name, ErrNotAllowed))
		}
		// A server without a scheme is reached with TLS or not by
		// what the user brings too (a client certificate): Check
		// decides it for the current context's cluster.
		if u, err := url.Parse(c.Server); err == nil && u.Scheme == "http" && !p.InsecureTLS {
			errs = append(errs, fmt.Errorf("cluster %q: server %s without TLS: %w", name, redactURLs(c.Server), ErrNotAllowed))
		}
	}
	return join(errs)
}

// checkFiles refuses the files of fieldsAndPaths (pairs of a field's name
// and the path it holds) that p does not allow.
func (p Policy) checkFiles(of string, fieldsAndPaths ...string) []error {
	var errs []error
	for i := 0; i+1 < len(fieldsAndPaths); i += 2 {
		field, path := fieldsAndPaths[i], fieldsAndPaths[i+1]
		if path != "" && !p.allowsFile(path) {
			errs = append(errs, fmt.Errorf("%s: file %s (%s): %w", of, path, field, ErrNotAllowed))
		}
	}
	return errs
}

// allowsFile reports whether p allows the file at path: a clean absolute
// path equal to one of p.Files. A path that is not clean is refused, since
// "link/.." is not the directory it lexically names when link is a
// symbolic link.
func (p Policy) allowsFile(path string) bool {
	return filepath.IsAbs(path) && path == filepath.Clean(path) &&
		slices.ContainsFunc(p.Files, func(f string) bool { return filepath.Clean(f) == path })
}

// Check refuses a config, made of a kubeconfig whose current context
// names cluster, that asks for what p does not allow: an exec or auth
// provider plugin it does not list, a file it does not list, TLS
// verification turned off or a server reached without TLS, unless p
// allows insecure TLS.
func (p Policy) Check(cluster string, cfg *rest.Config) error {
	var errs []error
	if e := cfg.ExecProvider; e != nil && !slices.Contains(p.ExecCommands, e.Command) {
		errs = append(errs, fmt.Errorf("exec plugin %q: %w", e.Command, ErrNotAllowed))
	}
	if a := cfg.AuthProvider; a != nil && !slices.Contains(p.AuthProviders, a.Name) {
		errs = append(errs, fmt.Errorf("auth provider %q: %w", a.Name, ErrNotAllowed))
	}
	errs = append(errs, p.checkFiles("the config", "tokenFile", cfg.BearerTokenFile, "client-certificate", cfg.CertFile,
		"client-key", cfg.KeyFile, "certificate-authority", cfg.CAFile)...)
	if !p.InsecureTLS {
		u, _, err := rest.DefaultServerUrlFor(cfg)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("cluster %q: server %s: %s", cluster, redactURLs(cfg.Host), redactURLs(err.Error())))
		case cfg.Insecure:
			errs = append(errs, fmt.Errorf("cluster %q: insecure-skip-tls-verify: %w", cluster, ErrNotAllowed))
		case u.Scheme != "https":
			errs = append(errs, fmt.Errorf("cluster %q: server %s without TLS: %w", cluster, redactURLs(cfg.Host), ErrNotAllowed))
		}
	}
	return join(errs)
}

// joined is several errors on one line, for an event's message.
type joined []error

func (j joined) Error() string {
	msgs := make([]string, len(j))
	for i, err := range j {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (j joined) Unwrap() []error { return j }

// join returns nil, the one error of errs, or all of them as one.
func join(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return joined(errs)
}

// sortedKeys returns the keys of m in order, so that errors come in the
// same order for the same kubeconfig.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
