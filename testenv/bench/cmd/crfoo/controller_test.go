package main

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
)

var _ = Describe("Foo Controller", func() {
	var namespace string

	BeforeEach(func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "foo-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		namespace = ns.Name
	})

	newFoo := func(name, deploymentName string, replicas *int32) *samplev1alpha1.Foo {
		return &samplev1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: samplev1alpha1.FooSpec{DeploymentName: deploymentName, Replicas: replicas}}
	}
	get := func(obj client.Object, name string) func(g Gomega) client.Object {
		return func(g Gomega) client.Object {
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj)).To(Succeed())
			return obj
		}
	}
	deployment := func(name string) func(g Gomega) *appsv1.Deployment {
		return func(g Gomega) *appsv1.Deployment { return get(&appsv1.Deployment{}, name)(g).(*appsv1.Deployment) }
	}
	containers := func(name string) func(g Gomega) []string {
		return func(g Gomega) []string {
			var names []string
			for _, c := range deployment(name)(g).Spec.Template.Spec.Containers {
				names = append(names, c.Name+"="+c.Image)
			}
			return names
		}
	}
	ready := func(name string) func(g Gomega) *metav1.Condition {
		return func(g Gomega) *metav1.Condition {
			foo := get(&samplev1alpha1.Foo{}, name)(g).(*samplev1alpha1.Foo)
			g.Expect(foo.Status.ObservedGeneration).To(Equal(foo.Generation))
			return meta.FindStatusCondition(foo.Status.Conditions, samplev1alpha1.ConditionReady)
		}
	}
	condition := func(status metav1.ConditionStatus, reason, msg string) OmegaMatcher {
		return And(Not(BeNil()), HaveField("Status", status), HaveField("Reason", reason), HaveField("Message", msg))
	}
	readyMsg := func(name string, available, want int32) string {
		return fmt.Sprintf("Deployment %q has %d of %d replicas available", name, available, want)
	}
	events := func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(k8sClient.List(ctx, &list, client.InNamespace(namespace))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			out = append(out, e.Type+" "+e.Reason)
		}
		return out
	}
	edit := func(name string, change func(d *appsv1.Deployment)) {
		Eventually(func(g Gomega) {
			d := deployment(name)(g)
			change(d)
			g.Expect(k8sClient.Update(ctx, d)).To(Succeed())
		}).Should(Succeed())
	}
	updateFoo := func(foo *samplev1alpha1.Foo, change func()) {
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(foo), foo)).To(Succeed())
			change()
			g.Expect(k8sClient.Update(ctx, foo)).To(Succeed())
		}).Should(Succeed())
	}
	// setAvailable plays the Deployment controller, which envtest lacks.
	setAvailable := func(name string, available int32) {
		Eventually(func(g Gomega) {
			d := deployment(name)(g)
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: *d.Spec.Replicas,
				UpdatedReplicas: *d.Spec.Replicas, ReadyReplicas: available, AvailableReplicas: available}
			g.Expect(k8sClient.Status().Update(ctx, d)).To(Succeed())
		}).Should(Succeed())
	}
	unchanged := func(obj client.Object, name string) {
		rv := get(obj, name)(Default).GetResourceVersion()
		Consistently(func(g Gomega) string { return get(obj, name)(g).GetResourceVersion() }, time.Second).Should(Equal(rv))
	}

	It("creates the Deployment controlled by the Foo", func() {
		foo := newFoo("example-foo", "web", ptr.To[int32](3))
		Expect(k8sClient.Create(ctx, foo)).To(Succeed())
		d := deployment("web")
		Eventually(d).Should(HaveField("Spec.Replicas", HaveValue(BeEquivalentTo(3))))
		created := d(Default)
		ref := metav1.GetControllerOf(created)
		Expect(ref).NotTo(BeNil(), "the Deployment has a controller owner reference")
		Expect(ref.UID).To(Equal(foo.UID))
		Expect(ref.APIVersion).To(Equal("samplecontroller.k8s.io/v1alpha1"))
		Expect(ref.Kind).To(Equal("Foo"))
		Expect(created.Spec.Selector.MatchLabels).To(Equal(map[string]string{"app": "nginx", "controller": "example-foo"}))
		Expect(created.Spec.Template.Labels).To(Equal(created.Spec.Selector.MatchLabels))
		Expect(created.Spec.Template.Spec.Containers).To(ConsistOf(HaveField("Image", "nginx:latest")))
		Eventually(ready("example-foo")).Should(condition(metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady, readyMsg("web", 0, 3)))

		By("reading unset replicas as one")
		Expect(k8sClient.Create(ctx, newFoo("one", "one", nil))).To(Succeed())
		Eventually(deployment("one")).Should(HaveField("Spec.Replicas", HaveValue(BeEquivalentTo(1))))
	})

	It("corrects what it owns in the Deployment and leaves the rest", func() {
		Expect(k8sClient.Create(ctx, newFoo("example-foo", "web", ptr.To[int32](3)))).To(Succeed())
		Eventually(deployment("web")).Should(Not(BeNil()))

		By("correcting replica drift and keeping defaulted fields")
		edit("web", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](1) })
		Eventually(deployment("web")).Should(HaveField("Spec.Replicas", HaveValue(BeEquivalentTo(3))))
		Expect(deployment("web")(Default).Spec.Template.Spec.Containers[0].ImagePullPolicy).To(Equal(corev1.PullAlways))
		Eventually(events).Should(ContainElement("Normal Synced"))

		By("correcting a changed image")
		edit("web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.0" })
		Eventually(containers("web")).Should(Equal([]string{"nginx=nginx:latest"}))
		Expect(deployment("web")(Default).Spec.Template.Spec.Containers[0].TerminationMessagePath).To(Equal("/dev/termination-log"))

		By("leaving a sidecar alone")
		edit("web", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers = append([]corev1.Container{{Name: "proxy", Image: "envoy:1"}}, d.Spec.Template.Spec.Containers...)
			d.Annotations = map[string]string{"policy.example.com/injected": "true"}
		})
		unchanged(&appsv1.Deployment{}, "web")

		By("correcting its own container beside the sidecar")
		edit("web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[1].Image = "nginx:1.0" })
		Eventually(containers("web")).Should(Equal([]string{"proxy=envoy:1", "nginx=nginx:latest"}))

		By("adding its container beside others")
		edit("web", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = d.Spec.Template.Spec.Containers[:1] })
		Eventually(containers("web")).Should(Equal([]string{"proxy=envoy:1", "nginx=nginx:latest"}))
	})

	It("mirrors the Deployment's availability in the Foo's status", func() {
		Expect(k8sClient.Create(ctx, newFoo("example-foo", "web", ptr.To[int32](3)))).To(Succeed())
		Eventually(deployment("web")).Should(Not(BeNil()))
		setAvailable("web", 1)
		Eventually(ready("example-foo")).Should(condition(metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady, readyMsg("web", 1, 3)))

		By("turning Ready")
		setAvailable("web", 3)
		Eventually(ready("example-foo")).Should(condition(metav1.ConditionTrue, samplev1alpha1.ReasonDeploymentReady, readyMsg("web", 3, 3)))
		Expect(get(&samplev1alpha1.Foo{}, "example-foo")(Default).(*samplev1alpha1.Foo).Status.AvailableReplicas).To(BeEquivalentTo(3))

		By("writing nothing when everything matches")
		unchanged(&appsv1.Deployment{}, "web")
		unchanged(&samplev1alpha1.Foo{}, "example-foo")

		By("not Ready while the Deployment rolls out a new generation")
		edit("web", func(d *appsv1.Deployment) { d.Spec.Template.Annotations = map[string]string{"restarted": "now"} })
		Eventually(ready("example-foo")).Should(condition(metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady, readyMsg("web", 3, 3)))
	})

	DescribeTable("never writes a Deployment it does not control",
		func(makeTheirs func()) {
			makeTheirs()
			Expect(k8sClient.Create(ctx, newFoo("example-foo", "web", ptr.To[int32](3)))).To(Succeed())
			Eventually(ready("example-foo")).Should(condition(metav1.ConditionFalse, samplev1alpha1.ReasonErrResourceExists,
				`Resource "web" already exists and is not managed by Foo`))
			Eventually(events).Should(ContainElement("Warning ErrResourceExists"))
			unchanged(&appsv1.Deployment{}, "web")
		},
		Entry("one without a controller", func() { Expect(k8sClient.Create(ctx, newDeploymentFor(namespace, "web"))).To(Succeed()) }),
		Entry("one controlled by another Foo", func() {
			Expect(k8sClient.Create(ctx, newFoo("other-foo", "web", nil))).To(Succeed())
			Eventually(deployment("web")).Should(Not(BeNil()))
		}),
	)

	It("creates the new Deployment of a renamed one and deletes the old one it controls", func() {
		Expect(k8sClient.Create(ctx, newFoo("other-foo", "theirs", nil))).To(Succeed())
		Eventually(deployment("theirs")).Should(Not(BeNil()))
		foo := newFoo("example-foo", "web", ptr.To[int32](3))
		Expect(k8sClient.Create(ctx, foo)).To(Succeed())
		Eventually(deployment("web")).Should(Not(BeNil()))

		updateFoo(foo, func() { foo.Spec.DeploymentName = "web-v2" })
		Eventually(deployment("web-v2")).Should(Not(BeNil()))
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "web"}, &appsv1.Deployment{}))
		}).Should(BeTrue())
		Eventually(ready("example-foo")).Should(condition(metav1.ConditionFalse, samplev1alpha1.ReasonDeploymentNotReady, readyMsg("web-v2", 0, 3)))
		unchanged(&appsv1.Deployment{}, "theirs")
	})

	It("leaves a Foo being deleted, or deleted, alone", func() {
		foo := newFoo("example-foo", "web", ptr.To[int32](3))
		foo.Finalizers = []string{"example.com/keep"}
		Expect(k8sClient.Create(ctx, foo)).To(Succeed())
		Eventually(deployment("web")).Should(Not(BeNil()))
		Expect(k8sClient.Delete(ctx, foo)).To(Succeed())
		// A retry that began before the deletion reached the cache may
		// still write once; after it, an edit stays.
		Eventually(func(g Gomega) {
			edit("web", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](1) })
			rv := get(&appsv1.Deployment{}, "web")(g).GetResourceVersion()
			g.Consistently(func(g Gomega) string { return get(&appsv1.Deployment{}, "web")(g).GetResourceVersion() }, time.Second).Should(Equal(rv))
		}).Should(Succeed())

		updateFoo(foo, func() { foo.Finalizers = nil })
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(foo), foo)) }).Should(BeTrue())
		unchanged(&appsv1.Deployment{}, "web")
	})

	DescribeTable("an invalid spec is refused by the API server",
		func(foo func() *samplev1alpha1.Foo, msg string) {
			Expect(k8sClient.Create(ctx, foo())).To(MatchError(ContainSubstring(msg)))
		},
		Entry("empty deploymentName", func() *samplev1alpha1.Foo { return newFoo("bad", "", nil) }, "spec.deploymentName"),
		Entry("invalid deploymentName", func() *samplev1alpha1.Foo { return newFoo("bad", "Web_1", nil) }, "spec.deploymentName"),
		Entry("too long deploymentName", func() *samplev1alpha1.Foo { return newFoo("bad", strings.Repeat("a", 254), nil) }, "spec.deploymentName"),
		Entry("negative replicas", func() *samplev1alpha1.Foo { return newFoo("bad", "web", ptr.To[int32](-1)) }, "spec.replicas"),
		Entry("huge replicas", func() *samplev1alpha1.Foo { return newFoo("bad", "web", ptr.To[int32](1<<30)) }, "spec.replicas"),
		Entry("a name too long for a pod label", func() *samplev1alpha1.Foo {
			return newFoo(strings.Repeat("f", samplev1alpha1.MaxNameLength+1), "web", nil)
		}, "metadata.name"),
	)

	It("retries a refusal whose status write failed", func() {
		Expect(k8sClient.Create(ctx, newDeploymentFor(namespace, "web"))).To(Succeed())
		Expect(k8sClient.Create(ctx, newFoo("conflicted", "web", ptr.To[int32](3)))).To(Succeed())
		Eventually(ready("conflicted")).Should(condition(metav1.ConditionFalse, samplev1alpha1.ReasonErrResourceExists,
			`Resource "web" already exists and is not managed by Foo`))
		Expect(conflicted.Load()).To(BeTrue(), "the first status write failed")
	})
})

// newDeploymentFor returns a Deployment of nginx named name, without an
// owner.
func newDeploymentFor(namespace, name string) *appsv1.Deployment {
	labels := map[string]string{"app": "nginx", "controller": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}},
			},
		},
	}
}
