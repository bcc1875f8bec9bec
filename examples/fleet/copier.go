package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// A source is a ConfigMap of the management cluster labelled LabelCopy; its
// copy in every member cluster has the same namespace, name and data, and
// the label LabelCopiedBy. The state of each copy is an annotation of the
// source, StatusPrefix+cluster: "Synced", "Pending", "Conflict: ..." or
// "Unreachable: ...".
const (
	LabelCopy     = "fleet.ctrlkit.io/copy"
	LabelCopiedBy = "fleet.ctrlkit.io/copied-by"
	StatusPrefix  = "status.fleet.ctrlkit.io/"
	fleetName     = "configmap-copier"

	StateSynced      = "Synced"
	StatePending     = "Pending"
	StateConflict    = "Conflict"
	StateUnreachable = "Unreachable"

	// ReasonConflict is the reason of the Warning event, in a member
	// cluster, on a ConfigMap of a source's name that is not a copy.
	ReasonConflict = "NotACopy"
)

// errNotACopy refuses a ConfigMap of a member that this operator did not
// create.
var errNotACopy = errors.New("exists and is not a copy (no label " + LabelCopiedBy + ")")

var (
	sourceSelector = labels.SelectorFromSet(labels.Set{LabelCopy: "true"})
	copySelector   = labels.SelectorFromSet(labels.Set{LabelCopiedBy: fleetName})
)

// member is what the copier keeps of a member cluster.
type member struct {
	client kubernetes.Interface
	copies *write.Objects[*corev1.ConfigMap]
	lister corelisters.ConfigMapLister
	events record.EventRecorder
	// refused tells, of each source reconciled since the member was
	// engaged and not gone since, whether its copy was refused (not a
	// copy): a bool by cache.ObjectName.
	refused sync.Map
}

// copier copies the sources to every member and reports their state on
// the sources.
type copier struct {
	mgmt    kubernetes.Interface
	sources corelisters.ConfigMapLister
	states  *write.Objects[*corev1.ConfigMap] // the sources, as their states are patched
	fleet   *multicluster.Fleet[*member]
	copies  *queue.Controller[multicluster.Key]
	status  *queue.Controller[cache.ObjectName]
}

// newCopier wires the two controllers on the sources of the management
// cluster (mgmtSources, cached in the namespace of the sources) and the
// fleet's members.
func newCopier(mgmt kubernetes.Interface, mgmtSources coreinformers.TypedConfigMapInformer, provider multicluster.Provider,
	fleetOpts []multicluster.Option, opts ...queue.Option) (*copier, error) {
	c := &copier{mgmt: mgmt, sources: mgmtSources.Lister(), states: write.New(mgmtSources.TypedInformer())}
	fleet, err := multicluster.New(fleetName, provider, c.engage, fleetOpts...)
	if err != nil {
		return nil, err
	}
	c.fleet = fleet
	if c.copies, err = multicluster.NewController(fleet, "copies", c.reconcileCopy, opts...); err != nil {
		return nil, err
	}
	if c.status, err = queue.New("copy-status", reconcile.Func[cache.ObjectName](c.reconcileStatus), opts...); err != nil {
		return nil, err
	}
	sources, all := mgmtSources.TypedInformer(), informer.AllKeys(mgmtSources.TypedInformer())
	// Members that join, leave, are refused or stop answering change the states.
	if err := c.status.Watch(queue.On(sources, informer.EnqueueHandler[*corev1.ConfigMap](c.status)),
		multicluster.OnMembers(fleet, c.status, func(multicluster.MemberChange) []cache.ObjectName { keys, _ := all(context.Background()); return keys })); err != nil {
		return nil, err
	}
	// A source's change goes to its copy in every cluster held here.
	err = c.copies.Watch(queue.On(sources, informer.EnqueueMappedHandler(c.inEveryCluster, c.copies)))
	return c, err
}

// inEveryCluster maps a source to the keys of its copies.
func (c *copier) inEveryCluster(src *corev1.ConfigMap) []multicluster.Key {
	var keys []multicluster.Key
	for _, cluster := range c.fleet.Clusters() {
		keys = append(keys, multicluster.Key{Cluster: cluster, ObjectName: cache.MetaObjectToName(src)})
	}
	return keys
}

// engage prepares a member: its copies are cached (and nothing else), their
// changes reconcile them and their source's state, and every source is
// queued for the member's first reconciles.
func (c *copier) engage(ctx context.Context, cl *multicluster.Cluster) (*member, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(cl.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = copySelector.String() }))
	cl.AddInformers(factory)
	copies := factory.Core().V1().ConfigMaps()
	q := cl.Queue(c.copies)
	if _, err := copies.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](q), cache.HandlerOptions{}); err != nil {
		return nil, err
	}
	if _, err := copies.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](c.status), cache.HandlerOptions{}); err != nil {
		return nil, err
	}
	srcs, err := c.sources.List(sourceSelector)
	if err != nil {
		return nil, err
	}
	for _, src := range srcs {
		q.AddLowPriority(cache.MetaObjectToName(src))
	}
	return &member{client: cl.Client, copies: write.New(copies.TypedInformer()), lister: copies.Lister(), events: cl.Recorder}, nil
}

// reconcileCopy makes the copy of key's source in key's cluster match the
// source: created, updated, or deleted once the source is gone. A
// ConfigMap of that name that is not a copy is left alone.
func (c *copier) reconcileCopy(ctx context.Context, m *member, key multicluster.Key) (reconcile.Result, error) {
	defer c.status.Add(key.ObjectName)
	src, err := c.sources.ConfigMaps(key.Namespace).Get(key.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	isSource := err == nil && sourceSelector.Matches(labels.Set(src.Labels))
	if !isSource { // a source gone is forgotten
		m.refused.Delete(key.ObjectName)
	}
	client := m.client.CoreV1().ConfigMaps(key.Namespace)
	cp, found, err := m.copies.Get(key.ObjectName)
	switch {
	case err != nil:
		return reconcile.Result{}, err
	case !isSource && found:
		return reconcile.Result{}, m.copies.Delete(ctx, client, cp)
	case !isSource:
		return reconcile.Result{}, nil
	}
	if err := c.ensureNamespace(ctx, m, key.Namespace); err != nil {
		return reconcile.Result{}, err
	}
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{LabelCopiedBy: fleetName}}}
	_, _, err = m.copies.Ensure(ctx, client, want, func(cm *corev1.ConfigMap) error {
		if cm.Labels[LabelCopiedBy] != fleetName {
			return errNotACopy
		}
		cm.Data, cm.BinaryData = src.Data, src.BinaryData
		return nil
	})
	m.refused.Store(key.ObjectName, errors.Is(err, errNotACopy))
	if errors.Is(err, errNotACopy) {
		ref := &corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: key.Namespace, Name: key.Name}
		m.events.Eventf(ref, corev1.EventTypeWarning, ReasonConflict, "Not copying %s here: a ConfigMap of its name %s", key.ObjectName, errNotACopy)
		return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("ConfigMap %s %w", key, errNotACopy))
	}
	return reconcile.Result{}, err
}

// ensureNamespace creates the copy's namespace in the member if it is
// missing.
func (c *copier) ensureNamespace(ctx context.Context, m *member, namespace string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := m.client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return err
	}
	_, err := m.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// reconcileStatus writes the state of the source's copy in every cluster
// this replica holds into the source's annotations, and removes the
// annotations of clusters that are no longer members, once the fleet has
// synced: until its provider has reported every member, a cluster it does
// not list may be a member it has not heard of yet. The clusters other
// replicas hold are theirs to report. A cache that has not seen the last
// patch yet is waited for, not patched again.
func (c *copier) reconcileStatus(ctx context.Context, key cache.ObjectName) (reconcile.Result, error) {
	src, found, err := c.states.Get(key)
	if err != nil || !found || !sourceSelector.Matches(labels.Set(src.Labels)) {
		return reconcile.Result{}, err
	}
	// Synced before the members are listed: a list taken after holds
	// every member the provider knew when it started.
	synced := c.fleet.HasSynced()
	members := c.fleet.Members()
	changes := map[string]any{}
	for _, cluster := range members {
		state, held := c.state(src, cluster)
		if held && src.Annotations[StatusPrefix+cluster] != state {
			changes[StatusPrefix+cluster] = state
		}
	}
	if synced {
		for k := range src.Annotations {
			if cluster, ok := strings.CutPrefix(k, StatusPrefix); ok && !slices.Contains(members, cluster) {
				changes[k] = nil
			}
		}
	}
	if len(changes) == 0 {
		return reconcile.Result{}, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": changes}})
	if err != nil {
		return reconcile.Result{}, err
	}
	_, err = c.states.Patch(ctx, c.mgmt.CoreV1().ConfigMaps(key.Namespace), src, types.MergePatchType, patch)
	return reconcile.Result{}, err
}

// state returns the state of src's copy in cluster, and whether it is
// this replica's to write: it holds the cluster, and knows more than the
// state recorded (not while the cluster is still connecting).
func (c *copier) state(src *corev1.ConfigMap, cluster string) (state string, held bool) {
	st, held := c.fleet.Status(cluster)
	switch {
	case !held:
		return "", false
	case !st.Ready && st.Err != nil:
		return StateUnreachable + ": " + st.Err.Error(), true
	case !st.Ready && src.Annotations[StatusPrefix+cluster] != "":
		return "", false // still connecting: the state recorded stands until it is known
	case !st.Ready:
		return StatePending, true
	}
	m, ok := c.fleet.Get(cluster)
	if !ok {
		return StatePending, true
	}
	refused, reconciled := m.refused.Load(cache.MetaObjectToName(src))
	switch {
	case refused == true:
		return StateConflict + ": " + errNotACopy.Error(), true
	case !reconciled && strings.HasPrefix(src.Annotations[StatusPrefix+cluster], StateConflict):
		return "", false // the Conflict recorded stands until the copy is reconciled here
	}
	cp, err := m.lister.ConfigMaps(src.Namespace).Get(src.Name)
	if err != nil || !maps.Equal(cp.Data, src.Data) || !maps.EqualFunc(cp.BinaryData, src.BinaryData, bytes.Equal) {
		return StatePending, true
	}
	return StateSynced, true
}
