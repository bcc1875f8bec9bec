package informer_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/informer"
)

// A controller enqueues the key of every Deployment labelled app=web whose
// spec changed. In a real controller the handler goes to the controller's
// Watch with queue.On (or to the typed informer's AddTypedEventHandler) and
// the queue is the controller; here the informer's calls are made by hand.
func ExampleEnqueueHandler() {
	enqueue := informer.QueueFunc[cache.ObjectName](func(key cache.ObjectName) { fmt.Println("enqueue", key) })
	sel, _ := labels.Parse("app=web")

	handler := informer.EnqueueHandler[*appsv1.Deployment](enqueue,
		informer.WithPredicates(informer.ResourceVersionChanged(), informer.LabelSelector(sel), informer.GenerationChanged()))

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

	// A delete the informer noticed only on a relist carries the last state
	// it knew, which the label selector judges.
	handler.OnDelete(cache.DeletedObject[*appsv1.Deployment]{
		OptionalObj:       spec,
		FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: "default/web", Obj: spec},
	})

	// One without any known state cannot be judged; its key is enqueued.
	handler.OnDelete(cache.DeletedObject[*appsv1.Deployment]{
		FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: "default/gone"},
	})

	// Output:
	// enqueue default/web
	// enqueue default/web
	// enqueue default/web
	// enqueue default/gone
}

// NewHandler puts predicates in front of any typed client-go handler.
func ExampleNewHandler() {
	handler := informer.NewHandler[*appsv1.Deployment](cache.TypedResourceEventHandlerDetailedFuncs[*appsv1.Deployment]{
		AddFunc: func(d *appsv1.Deployment, isInInitialList bool) {
			fmt.Println("add", d.Name, "initial:", isInInitialList)
		},
		DeleteFunc: func(d cache.DeletedObject[*appsv1.Deployment]) {
			fmt.Println("delete", d.GetObjectName(), "final state unknown:", d.FinalStateUnknown != nil)
		},
	}, informer.WithPredicates(informer.ObjectFunc(func(d *appsv1.Deployment) bool { return d.Name != "skipped" })))

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	handler.OnAdd(d, true)
	handler.OnAdd(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "skipped"}}, false)
	handler.OnDelete(cache.DeletedObject[*appsv1.Deployment]{
		OptionalObj:       d,
		FinalStateUnknown: &cache.DeletedFinalStateUnknown{Key: "default/web", Obj: d},
	})

	// Output:
	// add web initial: true
	// delete default/web final state unknown: true
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

	reg, err := factory.Apps().V1().Deployments().TypedInformer().AddTypedEventHandler(
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
	deployments := factory.Apps().V1().Deployments().TypedInformer()
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
	_ = deployments.GetTypedIndexer().Add(web)

	// The handler belongs on the ConfigMap informer:
	// queue.On(factory.Core().V1().ConfigMaps().TypedInformer(), handler).
	handler := informer.EnqueueByIndex(byConfigMap, informer.KeyOf[*corev1.ConfigMap],
		informer.QueueFunc[cache.ObjectName](func(key cache.ObjectName) { fmt.Println("enqueue", key) }))
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings", ResourceVersion: "2"}}
	old := settings.DeepCopy()
	old.ResourceVersion = "1"
	handler.OnUpdate(old, settings)

	// Output:
	// enqueue default/web
}

// An index of Deployments by the UID of their controller: each value
// belongs to one Deployment or two, so the index files them in buckets,
// and List still answers with exactly the Deployments of that UID.
func ExampleWithBuckets() {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	deployments := factory.Apps().V1().Deployments().TypedInformer()
	byController, err := informer.NewIndex(deployments, "controller-uid", func(d *appsv1.Deployment) []string {
		if ref := metav1.GetControllerOf(d); ref != nil {
			return []string{string(ref.UID)}
		}
		return nil
	}, informer.WithBuckets(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	// The informer would fill its cache; here three Deployments are put there.
	for i, uid := range []types.UID{"uid-a", "uid-b", "uid-c"} {
		_ = deployments.GetTypedIndexer().Add(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default",
			Name: fmt.Sprintf("web-%d", i), OwnerReferences: []metav1.OwnerReference{{UID: uid, Controller: ptr.To(true)}}}})
	}
	controlled, err := byController.List("uid-b")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range controlled {
		fmt.Println(d.Name)
	}
	// Output:
	// web-1
}
