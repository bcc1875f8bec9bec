// Package kubeconfig is a multicluster.Provider that reads the member
// clusters from Secrets of the management cluster: every Secret of one
// namespace that Config.Selector selects (by default, those that carry
// the label Label, whatever its value) is a member named after the
// Secret, reached with the kubeconfig under its data key Config.DataKey
// (by default DataKey, "kubeconfig").
//
//	p, err := kubeconfig.New(kubeconfig.Config{Client: kubeClient, Namespace: "fleet-system"})
//	if err != nil {
//		return err
//	}
//	fleet, err := multicluster.New("copier", p, engage)
//
// The Secrets that multicluster-runtime's kubeconfig provider reads (the
// label sigs.k8s.io/multicluster-runtime-kubeconfig set to "true", the
// key "kubeconfig") are read with
//
//	p, err := kubeconfig.New(kubeconfig.Config{
//		Client:    kubeClient,
//		Namespace: "fleet-system",
//		Selector:  labels.SelectorFromSet(labels.Set{"sigs.k8s.io/multicluster-runtime-kubeconfig": "true"}),
//		DataKey:   "kubeconfig",
//	})
//
// What that provider's RESTOptions do to a member's config (a user agent,
// rate limits), the Fleet's client constructor does here
// (multicluster.WithClients, which is given each member's config).
//
// A Secret whose kubeconfig changes (rotated credentials, a new address)
// restarts its cluster with the new config; a Secret that is deleted, or
// is no longer selected (it lost the label), removes its cluster.
//
// # Secrets that are no member
//
// A selected Secret that has no kubeconfig under the data key, or whose
// kubeconfig cannot be read or is not allowed (see below), is no member:
// its cluster is removed (or never engaged), and the reason is reported
// where an operator's user looks for it:
//
//   - a Warning event on the Secret (ReasonInvalidKubeconfig, or
//     ReasonNotAllowed), which kubectl describe secret shows, and kubectl
//     get events --field-selector type=Warning lists;
//   - the Fleet's Status of the cluster: not ready, with the reason as
//     its Err (multicluster.Refuser), on every replica;
//   - Provider.Refused, which lists every refused Secret with its reason
//     (to report them in an object's status, or a log).
//
// The other members go on. The reason names what is wrong (a missing key,
// a line, a field, a name used twice), never what the kubeconfig holds:
// client-go's decoding errors, which print tokens and passwords, are not
// passed on. A Secret refused again for the same reason (an update of its
// metadata, a relist) is not reported again: no new event, and the
// Status's Since stays.
//
// # Permissions
//
// The Provider lists and watches the Secrets of its namespace, and
// records events there: its operator needs, in that namespace (a Role),
// get, list and watch on secrets, and create and patch on events (patch
// counts an event that repeats). It reads no Secret of another namespace.
//
// # Kubeconfigs are untrusted
//
// Whoever can write one Secret of the namespace writes a kubeconfig the
// operator uses, and the operator holds every member's credentials. So a
// kubeconfig is refused, the same way as one that cannot be read (with the
// reason ReasonNotAllowed, and an error wrapping ErrNotAllowed), if any of
// its users or clusters, used by its current context or not, asks for
// what the operator did not allow:
//
//   - running a command in the operator: an exec plugin (exec) or an auth
//     provider plugin (auth-provider); Config.AllowExec and
//     Config.AllowAuthProviders allow them by name;
//   - reading a file of the operator's, whose content would go to the
//     kubeconfig's server: tokenFile, client-certificate, client-key,
//     certificate-authority; Config.AllowFiles allows them by path;
//   - turning off TLS verification: insecure-skip-tls-verify, or a server
//     reached without TLS (http://, or no scheme and no certificate
//     authority); Config.AllowInsecureTLS allows both. A server without a
//     scheme is judged for the current context's cluster alone, since
//     the user's client certificate also decides whether it is reached
//     with TLS.
//
// Credentials and certificates given in the kubeconfig itself (token,
// client-certificate-data, client-key-data, certificate-authority-data,
// username and password), tls-server-name, proxy-url and impersonation
// need no opt-in: they use nothing of the operator's. The kubeconfig is
// checked before client-go reads it, since client-go reads the files a
// kubeconfig names while it makes the config.
package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/events"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/internal/reported"
)

// Label marks a Secret that holds a member cluster's kubeconfig, when
// Config.Selector is not set; its value is not read.
const Label = "multicluster.ctrlkit.io/kubeconfig"

// DataKey is the key of the kubeconfig in a member's Secret, when
// Config.DataKey is not set.
const DataKey = "kubeconfig"

// Reasons of the events on Secrets.
const (
	// ReasonInvalidKubeconfig: the Secret has no kubeconfig under the
	// data key, or its kubeconfig cannot be read.
	ReasonInvalidKubeconfig = "InvalidKubeconfig"
	// ReasonNotAllowed: the Secret's kubeconfig asks for what the
	// operator did not allow (see the package documentation).
	ReasonNotAllowed = "KubeconfigNotAllowed"
)

// ErrNotAllowed is wrapped by the error of a kubeconfig refused because it
// asks for what the operator did not allow, as the Fleet's Status of its
// cluster reports it.
var ErrNotAllowed = reported.ErrNotAllowed

// Config configures a Provider.
type Config struct {
	// Client reaches the management cluster; required.
	Client kubernetes.Interface
	// Namespace holds the Secrets; required. Only the Secrets of this
	// namespace are read.
	Namespace string
	// Selector selects the Secrets of Namespace that are members, by
	// their labels; labels.Everything() selects them all. Default (nil):
	// the Secrets that carry the label Label, whatever its value. A
	// selector that selects nothing (labels.Nothing()) is refused by New.
	Selector labels.Selector
	// DataKey is the key of the kubeconfig in a Secret's data; default
	// DataKey ("kubeconfig"). A selected Secret without it is no member
	// (see the package documentation).
	DataKey string
	// Component is the source of the events on Secrets; default
	// "multicluster-kubeconfig".
	Component string

	// AllowExec lists the exec plugins a kubeconfig may name, by their
	// command exactly as the kubeconfig writes it ("kubelogin",
	// "/usr/local/bin/aws-iam-authenticator"). An allowed plugin runs in
	// the operator with the arguments and environment the kubeconfig
	// gives it: allow only plugins that are safe with any. The
	// credentials it returns (made from the operator's own identity, for
	// a cloud provider's plugin) go to the server the kubeconfig names.
	// Default: none.
	AllowExec []string
	// AllowAuthProviders lists the auth provider plugins a kubeconfig may
	// name, by name ("oidc"), with the configuration the kubeconfig gives
	// them. Default: none.
	AllowAuthProviders []string
	// AllowFiles lists the files of the operator's that a kubeconfig may
	// name as its token, client certificate, client key or certificate
	// authority, by absolute path: what they hold goes to the
	// kubeconfig's server. A kubeconfig names them by the same path,
	// clean ("a/../b" is refused). Default: none.
	AllowFiles []string
	// AllowInsecureTLS lets a kubeconfig turn off the verification of
	// its server's certificate (insecure-skip-tls-verify) or reach its
	// server without TLS. Default false.
	AllowInsecureTLS bool
}

// Provider reports the members of a Fleet from Secrets; see the package
// documentation. Create it with New.
type Provider struct {
	cfg      Config
	reported reported.Kubeconfigs
}

var _ multicluster.Provider = (*Provider)(nil)

// New returns a Provider of the Secrets of cfg.Namespace that cfg.Selector
// selects. It returns an error if cfg.Client is nil, cfg.Namespace empty,
// cfg.Selector selects nothing, cfg.DataKey is not a valid key of a
// Secret's data, or an Allow field holds an empty name or a relative path.
func New(cfg Config) (*Provider, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, errors.New("client is nil"))
	}
	if cfg.Namespace == "" {
		errs = append(errs, errors.New("namespace is empty"))
	}
	if cfg.Component == "" {
		cfg.Component = "multicluster-kubeconfig"
	}
	if cfg.Selector == nil {
		req, err := labels.NewRequirement(Label, selection.Exists, nil)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
		cfg.Selector = labels.NewSelector().Add(*req)
	} else if !cfg.Selector.Empty() && cfg.Selector.String() == "" {
		// labels.Nothing(): its String is the empty selector, which an
		// API server reads as every Secret.
		errs = append(errs, errors.New("the selector selects nothing"))
	}
	if cfg.DataKey == "" {
		cfg.DataKey = DataKey
	} else if msgs := validation.IsConfigMapKey(cfg.DataKey); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("data key %q: %s", cfg.DataKey, strings.Join(msgs, "; ")))
	}
	policy := reported.Policy{ExecCommands: slices.Clone(cfg.AllowExec), AuthProviders: slices.Clone(cfg.AllowAuthProviders),
		Files: slices.Clone(cfg.AllowFiles), InsecureTLS: cfg.AllowInsecureTLS}
	if err := policy.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return &Provider{cfg: cfg, reported: reported.Kubeconfigs{Policy: policy}}, nil
}

// Run watches the Secrets and reports their clusters to m until ctx ends.
func (p *Provider) Run(ctx context.Context, m multicluster.Members) error {
	logger := klog.FromContext(ctx).WithValues("namespace", p.cfg.Namespace)
	ctx = klog.NewContext(ctx, logger)
	recorder, err := events.NewRecorder(ctx, p.cfg.Client, p.cfg.Component)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(p.cfg.Client, 0, informers.WithNamespace(p.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = p.cfg.Selector.String() }))
	secrets := factory.Core().V1().Secrets().TypedInformer()
	reg, err := secrets.AddTypedEventHandler(cache.TypedResourceEventHandlerFuncs[*corev1.Secret]{
		AddFunc:    func(s *corev1.Secret) { p.set(ctx, m, recorder, s) },
		UpdateFunc: func(_, s *corev1.Secret) { p.set(ctx, m, recorder, s) },
		DeleteFunc: func(d cache.DeletedObject[*corev1.Secret]) { p.reported.Delete(m, d.GetObjectName().Name) },
	}, cache.HandlerOptions{Logger: &logger})
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		m.Synced()
	}
	<-ctx.Done()
	return nil
}

// Refused returns the selected Secrets that are no member, by name (the
// name of their cluster), with the reason: the error the Fleet's Status
// of the cluster reports (wrapping ErrNotAllowed for a kubeconfig that is
// not allowed). A Secret leaves the list when it becomes a member, is
// deleted or is no longer selected. It is empty before Run; it is safe to
// call from any goroutine, and the map is the caller's.
func (p *Provider) Refused() map[string]error { return p.reported.Refused() }

// set reports the cluster of a Secret, if its kubeconfig changed.
func (p *Provider) set(ctx context.Context, m multicluster.Members, recorder record.EventRecorderLogger, s *corev1.Secret) {
	if !p.cfg.Selector.Matches(labels.Set(s.Labels)) {
		// A watch by label reports a Secret that is no longer
		// selected as deleted; checking again keeps other sources of
		// events honest.
		p.reported.Delete(m, s.Name)
		return
	}
	// Set and Refuse return a refusal once: the same one again is not
	// logged or recorded again.
	var err error
	data, ok := s.Data[p.cfg.DataKey]
	if ok {
		err = p.reported.Set(m, s.Name, data)
	} else {
		err = p.reported.Refuse(m, s.Name, fmt.Errorf("the Secret has no data key %q", p.cfg.DataKey))
	}
	if err == nil {
		return
	}
	klog.FromContext(ctx).Error(err, "A Secret is no member", "secret", s.Name)
	reason := ReasonInvalidKubeconfig
	if errors.Is(err, ErrNotAllowed) {
		reason = ReasonNotAllowed
	}
	if ok {
		recorder.Eventf(s, corev1.EventTypeWarning, reason, "Cluster %s is not a member: data key %q: %v", s.Name, p.cfg.DataKey, err)
	} else {
		recorder.Eventf(s, corev1.EventTypeWarning, reason, "Cluster %s is not a member: %v", s.Name, err)
	}
}
