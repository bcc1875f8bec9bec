// Package kubeconfig is a multicluster.Provider that reads the member
// clusters from Secrets of the management cluster: every Secret in one
// namespace that carries the label Label is a member named after the
// Secret, reached with the kubeconfig in its data key "kubeconfig".
//
//	p, err := kubeconfig.New(kubeconfig.Config{Client: kubeClient, Namespace: "fleet-system"})
//	if err != nil {
//		return err
//	}
//	fleet, err := multicluster.New("copier", p, engage)
//
// A Secret whose kubeconfig changes (rotated credentials, a new address)
// restarts its cluster with the new config; a Secret that is deleted, or
// loses the label, removes its cluster. A Secret whose kubeconfig cannot
// be read is no member: its cluster is removed and a Warning event on the
// Secret says why.
package kubeconfig

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/events"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/internal/reported"
)

// Label marks a Secret that holds a member cluster's kubeconfig; its value
// is not read.
const Label = "multicluster.ctrlkit.io/kubeconfig"

// DataKey is the key of the kubeconfig in a member's Secret.
const DataKey = "kubeconfig"

// Reasons of the events on Secrets.
const (
	// ReasonInvalidKubeconfig: the Secret's kubeconfig cannot be read.
	ReasonInvalidKubeconfig = "InvalidKubeconfig"
)

// Config configures a Provider.
type Config struct {
	// Client reaches the management cluster; required.
	Client kubernetes.Interface
	// Namespace holds the Secrets; required.
	Namespace string
	// Component is the source of the events on Secrets; default
	// "multicluster-kubeconfig".
	Component string
}

// Provider reports the members of a Fleet from Secrets; see the package
// documentation. Create it with New.
type Provider struct {
	cfg      Config
	reported reported.Kubeconfigs
}

var _ multicluster.Provider = (*Provider)(nil)

// New returns a Provider of the Secrets in cfg.Namespace.
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
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return &Provider{cfg: cfg}, nil
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
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = Label }))
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

// set reports the cluster of a Secret, if its kubeconfig changed.
func (p *Provider) set(ctx context.Context, m multicluster.Members, recorder record.EventRecorderLogger, s *corev1.Secret) {
	if _, labelled := s.Labels[Label]; !labelled {
		// A watch by label reports a Secret that lost the label as
		// deleted; checking again keeps other sources of events honest.
		p.reported.Delete(m, s.Name)
		return
	}
	if err := p.reported.Set(m, s.Name, s.Data[DataKey]); err != nil {
		klog.FromContext(ctx).Error(err, "A Secret is no member", "secret", s.Name)
		recorder.Eventf(s, corev1.EventTypeWarning, ReasonInvalidKubeconfig, "Cluster %s is not a member: data key %q: %v", s.Name, DataKey, err)
	}
}
