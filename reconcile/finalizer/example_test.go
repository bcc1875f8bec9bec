package finalizer_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/reconcile/finalizer"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// externalStore is a system outside the cluster that holds one entry per
// ConfigMap.
type externalStore interface {
	Put(ctx context.Context, name string, data map[string]string) error
	Delete(ctx context.Context, name string) error // nil when already gone
}

func Example() {
	kube := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	var store externalStore // the external system's client

	entries := write.New(factory.Core().V1().ConfigMaps().TypedInformer())
	r := finalizer.Reconciler("example.com/entry", entries, kube.CoreV1().ConfigMaps, finalizer.Funcs[*corev1.ConfigMap]{
		Apply: func(ctx context.Context, cm *corev1.ConfigMap) (reconcile.Result, error) {
			return reconcile.Result{}, store.Put(ctx, cm.Name, cm.Data) // the finalizer is in place
		},
		Cleanup: func(ctx context.Context, cm *corev1.ConfigMap) (reconcile.Result, error) {
			return reconcile.Result{}, store.Delete(ctx, cm.Name) // the finalizer goes once this succeeds
		},
	})
	var _ reconcile.Reconciler[cache.ObjectName] = r // run it with a queue.Controller watching the ConfigMaps
}

// dnsZone is a DNS service outside the cluster.
type dnsZone interface {
	Put(ctx context.Context, name, ip string) error
	Delete(ctx context.Context, name string) error // nil when already gone
}

// Services opt in with an annotation that names their DNS record: only
// those get the finalizer, with the name kept beside it, and removing the
// annotation deletes the record and releases the Service.
func ExampleReconciler_scoped() {
	kube := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	var dns dnsZone // the DNS service's client

	services := write.New(factory.Core().V1().Services().TypedInformer())
	r := finalizer.Reconciler("example.com/mirror", services, kube.CoreV1().Services, finalizer.Funcs[*corev1.Service]{
		InScope:   func(svc *corev1.Service) bool { return svc.Annotations["example.com/dns-name"] != "" },
		KeepValue: func(svc *corev1.Service) string { return svc.Annotations["example.com/dns-name"] },
		Apply: func(ctx context.Context, svc *corev1.Service) (reconcile.Result, error) {
			dnsName, _ := finalizer.Kept(svc, "example.com/mirror")
			return reconcile.Result{}, dns.Put(ctx, dnsName, svc.Spec.ClusterIP)
		},
		Cleanup: func(ctx context.Context, svc *corev1.Service) (reconcile.Result, error) {
			dnsName, _ := finalizer.Kept(svc, "example.com/mirror") // what was created, whatever the annotation says now
			return reconcile.Result{}, dns.Delete(ctx, dnsName)
		},
	})
	var _ reconcile.Reconciler[cache.ObjectName] = r
}

// Namespaces are cluster-scoped: their typed client takes no namespace, and
// ClusterScoped makes it what Reconciler takes.
func ExampleClusterScoped() {
	kube := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(kube, 0)
	var store externalStore // the external system's client

	namespaces := write.New(factory.Core().V1().Namespaces().TypedInformer())
	r := finalizer.Reconciler("example.com/tenant", namespaces, finalizer.ClusterScoped(kube.CoreV1().Namespaces()), finalizer.Funcs[*corev1.Namespace]{
		Apply: func(ctx context.Context, ns *corev1.Namespace) (reconcile.Result, error) {
			return reconcile.Result{}, store.Put(ctx, ns.Name, ns.Labels)
		},
		Cleanup: func(ctx context.Context, ns *corev1.Namespace) (reconcile.Result, error) {
			return reconcile.Result{}, store.Delete(ctx, ns.Name)
		},
	})
	var _ reconcile.Reconciler[cache.ObjectName] = r
}
