package informer_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/informer"
)

// A controller enqueues the key of every Deployment labelled app=web whose
// spec changed. In a real controller the handler goes to the controller's
// Watch (or SharedInformer.AddEventHandler) and the queue is the
// controller; here the informer's calls are made by hand.
func ExampleEnqueueHandler() {
	enqueue := informer.QueueFunc[cache.ObjectName](func(key cache.ObjectName) { fmt.Println("enqueue", key) })
	sel, _ := labels.Parse("app=web")

	handler := informer.EnqueueHandler[*appsv1.Deployment](enqueue,
		informer.WithPredicates(informer.ResourceVersionChanged(), informer.LabelSelector(sel), informer.GenerationChanged()),
		// Reports go to utilruntime.HandleErrorWithContext by default.
		informer.WithErrorHandler(func(_ context.Context, err error, _ string, _ ...any) {
			fmt.Println("reported:", err)
		}),
	)

	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "web", Labels: map[string]string{"app": "web"},
		Generation: 1, ResourceVersion: "10",
	}}
	handler.OnAdd(web, true)

	// A resync: same resourceVersion, dropped.
	handler.OnUpdate(web, web)

	// A status-only change: generation unchanged, dropped.
	status := web.DeepCopy()
	status.ResourceVersion = "11"
	handler.OnUpdate(web, status)

	// A spec change.
	spec := status.DeepCopy()
	spec.ResourceVersion, spec.Generation = "12", 2
	handler.OnUpdate(status, spec)

	// A delete the informer missed arrives as a tombstone; it is unwrapped
	// before the label selector looks at it.
	handler.OnDelete(cache.DeletedFinalStateUnknown{Key: "default/web", Obj: spec})

	// A wrong type is reported, never a panic.
	handler.OnDelete(cache.DeletedFinalStateUnknown{Key: "default/p", Obj: &corev1.Pod{}})

	// Output:
	// enqueue default/web
	// enqueue default/web
	// enqueue default/web
	// reported: informer: delete event: expected *v1.Deployment, got *v1.Pod in a DeletedFinalStateUnknown with key "default/p"
}

// NewHandler gives typed callbacks; the add callback learns whether the
// object came with the informer's initial list.
func ExampleNewHandler() {
	handler := informer.NewHandler(informer.Funcs[*appsv1.Deployment]{
		AddFunc: func(d *appsv1.Deployment, isInInitialList bool) {
			fmt.Println("add", d.Name, "initial:", isInInitialList)
		},
		DeleteFunc: func(d *appsv1.Deployment, finalStateUnknown bool) {
			fmt.Println("delete", d.Name, "final state unknown:", finalStateUnknown)
		},
	})

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	handler.OnAdd(d, true)
	handler.OnDelete(cache.DeletedFinalStateUnknown{Key: "default/web", Obj: d})

	// Output:
	// add web initial: true
	// delete web final state unknown: true
}

// With a plain client-go workqueue, QueueFunc gives the handler one add
// function for both priorities. The registration's HasSynced reports true
// once every object of the informer's initial list has been enqueued.
func ExampleQueueFunc() {
	ctx, cancel := context.WithCancel(context.Background())

	client := fake.NewClientset(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}})
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTransform(informer.StripManagedFields))
	defer func() {
		cancel()           // stop the informers,
		factory.Shutdown() // then wait for them.
	}()

	queue := workqueue.NewTyped[cache.ObjectName]()
	defer queue.ShutDown()

	reg, err := factory.Apps().V1().Deployments().Informer().AddEventHandler(
		informer.EnqueueHandler[*appsv1.Deployment](informer.QueueFunc[cache.ObjectName](queue.Add)))
	if err != nil {
		fmt.Println(err)
		return
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		fmt.Println("not synced")
		return
	}
	key, _ := queue.Get()
	fmt.Println("queued:", key, "remaining:", queue.Len())
	queue.Done(key)

	// Output:
	// queued: default/web remaining: 0
}

// An index files Deployments under the ConfigMaps they mount; a ConfigMap
// handler enqueues the Deployments that mount a changed ConfigMap.
func ExampleEnqueueByIndex() {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	deployments := factory.Apps().V1().Deployments().Informer()
	byConfigMap, err := informer.NewIndex(deployments, "configmap", func(d *appsv1.Deployment) []string {
		var refs []string
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil {
				refs = append(refs, d.Namespace+"/"+v.ConfigMap.Name)
			}
		}
		return refs
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The informer would fill its cache; here one Deployment is put there.
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	web.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "settings", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}},
	}}}
	_ = deployments.GetIndexer().Add(web)

	handler := informer.EnqueueByIndex(byConfigMap, func(cm *corev1.ConfigMap) []string {
		return []string{cm.Namespace + "/" + cm.Name}
	}, informer.QueueFunc[cache.ObjectName](func(key cache.ObjectName) { fmt.Println("enqueue", key) }))
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings", ResourceVersion: "2"}}
	old := settings.DeepCopy()
	old.ResourceVersion = "1"
	handler.OnUpdate(old, settings)

	// Output:
	// enqueue default/web
}
