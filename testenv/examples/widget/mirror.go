package widget

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/finalizer"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=patch

// MirrorAs is the annotation by which a ConfigMap opts in to the mirror
// controller: its value is the name of the ConfigMap's entry in the
// Mirror. Removing it (or deleting the ConfigMap) removes the entry.
const MirrorAs = "example.com/mirror-as"

// MirrorFinalizer is the finalizer the mirror controller keeps on the
// ConfigMaps that opted in, with the entry name they had then.
const MirrorFinalizer = "example.com/mirror"

// Mirror is a store outside the cluster: entries by name. It stands for a
// DNS zone or a cloud resource that must not outlive the object that asked
// for it. It is safe for concurrent use.
type Mirror struct {
	mu      sync.Mutex
	entries map[string]map[string]string
}

// Entries returns a copy of the entries.
func (m *Mirror) Entries() map[string]map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]map[string]string, len(m.entries))
	for name, data := range m.entries {
		out[name] = data
	}
	return out
}

func (m *Mirror) put(name string, data map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[string]map[string]string{}
	}
	m.entries[name] = data
}

func (m *Mirror) remove(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, name)
}

// NewMirrorController returns a controller that keeps an entry in mirror
// for every ConfigMap annotated with MirrorAs, under the name the
// annotation had when the ConfigMap opted in (kept with the finalizer), and
// removes it when the annotation goes, changes or the ConfigMap is deleted.
func NewMirrorController(kube kubernetes.Interface, configMaps coreinformers.TypedConfigMapInformer, mirror *Mirror, opts ...queue.Option) (*queue.Controller[cache.ObjectName], error) {
	objects := write.New(configMaps.TypedInformer())
	r := finalizer.Reconciler(MirrorFinalizer, objects, kube.CoreV1().ConfigMaps, finalizer.Funcs[*corev1.ConfigMap]{
		InScope:   func(cm *corev1.ConfigMap) bool { return cm.Annotations[MirrorAs] != "" },
		KeepValue: func(cm *corev1.ConfigMap) string { return cm.Annotations[MirrorAs] },
		Apply: func(ctx context.Context, cm *corev1.ConfigMap) (reconcile.Result, error) {
			kept, _ := finalizer.Kept(cm, MirrorFinalizer)
			if want := cm.Annotations[MirrorAs]; want != kept { // renamed: the old entry goes first
				mirror.remove(kept)
				_, err := finalizer.Keep(ctx, objects, kube.CoreV1().ConfigMaps(cm.Namespace), cm, MirrorFinalizer, want)
				return reconcile.Result{}, err // the Keep's watch event brings the ConfigMap back
			}
			mirror.put(kept, cm.Data)
			return reconcile.Result{}, nil
		},
		Cleanup: func(ctx context.Context, cm *corev1.ConfigMap) (reconcile.Result, error) {
			kept, _ := finalizer.Kept(cm, MirrorFinalizer)
			mirror.remove(kept)
			return reconcile.Result{}, nil
		},
	})
	ctrl, err := queue.New("mirror", r, opts...)
	if err != nil {
		return nil, err
	}
	return ctrl, ctrl.Watch(queue.On(configMaps.TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl)))
}
