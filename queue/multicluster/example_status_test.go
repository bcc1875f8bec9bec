package multicluster_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// site is what the propagator keeps of a member: its client.
type site struct{ client kubernetes.Interface }

// propagator applies every ConfigMap of the management cluster (a hub
// object) to every member, and writes where each stands (per member, and
// one Ready condition) with writeStatus; written tells how many member
// entries the status a source holds has.
type propagator struct {
	sources     corelisters.ConfigMapLister
	fleet       *multicluster.Fleet[*site]
	results     *multicluster.Results[cache.ObjectName, string]
	hub         *queue.Controller[cache.ObjectName]
	copies      *queue.Controller[multicluster.Key]
	writeStatus func(ctx context.Context, src *corev1.ConfigMap, members []multicluster.MemberStatus, ready metav1.Condition) error
	written     func(src *corev1.ConfigMap) int
}

// newPropagator wires the per-member keys shape: one controller over the
// members' keys reports each member's result, and the hub controller
// builds each source's status from them.
func newPropagator(provider multicluster.Provider, sources coreinformers.TypedConfigMapInformer, opts ...multicluster.Option) (*propagator, error) {
	p := &propagator{sources: sources.Lister()}
	var err error
	if p.fleet, err = multicluster.New("propagator", provider, p.engage, opts...); err != nil {
		return nil, err
	}
	if p.copies, err = multicluster.NewController(p.fleet, "copies", p.reconcileCopy); err != nil {
		return nil, err
	}
	if p.hub, err = queue.New("sources", reconcile.Func[cache.ObjectName](p.reconcileSource)); err != nil {
		return nil, err
	}
	if p.results, err = multicluster.NewResults[string](p.fleet, p.hub); err != nil {
		return nil, err
	}
	err = p.hub.Watch(
		queue.On(sources.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](p.hub)),
		// A member that joins, leaves, becomes ready or not: every status.
		multicluster.OnMembers(p.fleet, p.hub, func(multicluster.MemberChange) []cache.ObjectName { return p.allSources() }),
	)
	if err != nil {
		return nil, err
	}
	err = p.copies.Watch(
		// A change of a source: its key in every member held here.
		queue.On(sources.TypedInformer(), informer.EnqueueMappedHandler(p.inEveryMember, p.copies)),
		// A member that becomes ready gets every source.
		multicluster.OnMembers(p.fleet, p.copies, p.sourcesIn),
	)
	return p, err
}

// engage caches nothing: the copies are read from the member.
func (p *propagator) engage(_ context.Context, cl *multicluster.Cluster) (*site, error) {
	return &site{client: cl.Client}, nil
}

// allSources lists the keys of every source.
func (p *propagator) allSources() []cache.ObjectName {
	srcs, _ := p.sources.List(labels.Everything())
	keys := make([]cache.ObjectName, 0, len(srcs))
	for _, src := range srcs {
		keys = append(keys, cache.MetaObjectToName(src))
	}
	return keys
}

// sourcesIn lists the keys of every source in a member that became ready.
func (p *propagator) sourcesIn(c multicluster.MemberChange) []multicluster.Key {
	if !c.Status.Ready {
		return nil
	}
	var keys []multicluster.Key
	for _, name := range p.allSources() {
		keys = append(keys, multicluster.Key{Cluster: c.Cluster, ObjectName: name})
	}
	return keys
}

// inEveryMember maps a source to its keys in every member held here.
func (p *propagator) inEveryMember(src *corev1.ConfigMap) []multicluster.Key {
	var keys []multicluster.Key
	for _, cluster := range p.fleet.Clusters() {
		keys = append(keys, multicluster.Key{Cluster: cluster, ObjectName: cache.MetaObjectToName(src)})
	}
	return keys
}

// reconcileCopy applies a source to one member and reports the result.
func (p *propagator) reconcileCopy(ctx context.Context, s *site, key multicluster.Key) (reconcile.Result, error) {
	src, err := p.sources.ConfigMaps(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		err = s.client.CoreV1().ConfigMaps(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			err = nil
		}
		return reconcile.Result{}, err
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	version, err := s.apply(ctx, src)
	p.results.Set(key.ObjectName, key.Cluster, result(src, version, err))
	return reconcile.Result{}, err
}

// reconcileSource writes a source's status: where its copies stand.
func (p *propagator) reconcileSource(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
	src, err := p.sources.ConfigMaps(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		p.results.Forget(key)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	clusters := p.fleet.Members()
	if !p.results.Reported(key, clusters, p.written(src)) {
		return reconcile.Result{}, nil // after a restart, the entries written before stand until the members found then report
	}
	members, ready := p.results.Status(key, src.Generation, clusters)
	return reconcile.Result{}, p.writeStatus(ctx, src, members, ready)
}

// reconcileEverywhere is the hub-centric shape: one reconcile of the
// source applies it to every member held here (ten seconds each at
// most), and writes its status. A member that failed is retried with
// the key's backoff; one that is not ready comes back with OnMembers.
// A source that is gone has its copy deleted in every member.
func (p *propagator) reconcileEverywhere(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
	src, err := p.sources.ConfigMaps(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return p.removeEverywhere(ctx, key)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	errs := p.fleet.Each(ctx, 10*time.Second, func(ctx context.Context, cluster string, s *site) error {
		version, err := s.apply(ctx, src)
		p.results.Set(key, cluster, result(src, version, err))
		return err
	})
	members, ready := p.results.Status(key, src.Generation, p.fleet.Members())
	return reconcile.Result{}, errors.Join(multicluster.Failed(errs), p.writeStatus(ctx, src, members, ready))
}

// removeEverywhere deletes the copies of a source that is gone, then
// forgets its results. Nothing is decided before the Fleet has synced
// (a member not known yet may hold a copy), and a member that is not
// ready counts as not done: the key is retried until every member
// reported answers, or leaves.
func (p *propagator) removeEverywhere(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
	if !p.fleet.HasSynced() {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	errs := p.fleet.Each(ctx, 10*time.Second, func(ctx context.Context, _ string, s *site) error {
		err := s.client.CoreV1().ConfigMaps(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	for _, cluster := range slices.Sorted(maps.Keys(errs)) {
		if errs[cluster] != nil {
			return reconcile.Result{}, fmt.Errorf("member %s: %w", cluster, errs[cluster])
		}
	}
	p.results.Forget(key)
	return reconcile.Result{}, nil
}

// result is a member's result of applying src.
func result(src *corev1.ConfigMap, version string, err error) multicluster.MemberResult[string] {
	if err != nil {
		return multicluster.MemberResult[string]{Reason: "ApplyFailed", Message: err.Error(), ObservedGeneration: src.Generation}
	}
	return multicluster.MemberResult[string]{Ready: true, Reason: "Applied", ObservedGeneration: src.Generation, Value: version}
}

// apply makes the member's copy of src hold its data, and returns the
// copy's resourceVersion.
func (s *site) apply(ctx context.Context, src *corev1.ConfigMap) (string, error) {
	client := s.client.CoreV1().ConfigMaps(src.Namespace)
	cp, err := client.Get(ctx, src.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cp, err = client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: src.Namespace, Name: src.Name}, Data: src.Data}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return cp.ResourceVersion, nil
	}
	if err != nil {
		return "", err
	}
	if maps.Equal(cp.Data, src.Data) {
		return cp.ResourceVersion, nil
	}
	cp = cp.DeepCopy()
	cp.Data = src.Data
	cp, err = client.Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return "", err
	}
	return cp.ResourceVersion, nil
}

var _ = (*propagator).reconcileEverywhere

// watchMembers is the example of OnMembers' documentation.
func watchMembers(fleet *multicluster.Fleet[*site], hub *queue.Controller[cache.ObjectName], allHubKeys func() []cache.ObjectName) error {
	err := hub.Watch(multicluster.OnMembers(fleet, hub, func(multicluster.MemberChange) []cache.ObjectName { return allHubKeys() }))
	return err
}

var _ = watchMembers

// The overall condition of a hub object's members: one member is not
// ready, and the condition names it.
func ExampleAggregate() {
	members := []multicluster.MemberStatus{
		{Cluster: "east", Ready: true, Reason: "Applied", ObservedGeneration: 3},
		{Cluster: "west", Reason: multicluster.ReasonUnreachable, Message: "not answering: connection refused"},
	}
	ready := multicluster.Aggregate(3, members)
	fmt.Println(ready.Type, ready.Status, ready.Reason)
	fmt.Println(ready.Message)
	// Output:
	// Ready False MembersUnreachable
	// 1 of 2 members not ready: west (Unreachable: not answering: connection refused)
}
