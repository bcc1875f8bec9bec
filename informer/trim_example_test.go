package informer_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/informer"
)

// A controller that reads only the replicas, the container images and the
// available replicas of Deployments caches nothing else of them.
func ExampleTrim() {
	client := fake.NewClientset(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "nginx:1.29", Args: []string{"-g", "daemon off;"}}}}}},
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	deployments := factory.Apps().V1().Deployments()
	if err := informer.Trim[*appsv1.Deployment](deployments.Informer(),
		"spec.replicas", "spec.template.spec.containers.image", "status.availableReplicas"); err != nil {
		panic(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); factory.Shutdown() }()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	d, err := deployments.Lister().Deployments("default").Get("web")
	if err != nil {
		panic(err)
	}
	fmt.Println(*d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image, d.Spec.Template.Spec.Containers[0].Args, d.Labels, informer.Trimmed(d))
	// Output: 3 nginx:1.29 [] map[] true
}
