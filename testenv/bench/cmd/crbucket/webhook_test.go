package main

import (
	"context"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	storagev1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	storagev1alpha1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1alpha1"
)

// warningRecorder keeps the warnings the API server returns to a client.
type warningRecorder struct {
	mu       sync.Mutex
	messages []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = append(w.messages, message)
}

// take returns the warnings recorded since the last call.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.messages
	w.messages = nil
	return out
}

// The webhooks the suite serves (suite_test.go), with --default-region
// eu-west-1 and --regions eu-west-1,us-east-1,ap-south-1, called by the
// API server; no controller runs.
var _ = Describe("Bucket webhooks", func() {
	var (
		recorder *warningRecorder
		c        client.Client // records the warnings
	)

	BeforeEach(func() {
		recorder = &warningRecorder{}
		withWarnings := rest.CopyConfig(cfg)
		withWarnings.WarningHandlerWithContext = recorder
		var err error
		c, err = client.New(withWarnings, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
	})

	create := func(obj client.Object) {
		Expect(c.Create(ctx, obj)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, obj))).To(Succeed()) })
	}
	get := func(name string, obj client.Object) client.Object {
		Expect(k8sClient.Get(ctx, types.NamespacedName{Name: name}, obj)).To(Succeed())
		return obj
	}

	It("defaults the region and the deletion policy", func() {
		create(&storagev1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: "defaulted"}})
		b := get("defaulted", &storagev1.Bucket{}).(*storagev1.Bucket)
		Expect(b.Spec).To(Equal(storagev1.BucketSpec{Region: defaultRegion, DeletionPolicy: storagev1.DeletionPolicyDelete}))
		Expect(recorder.take()).To(BeEmpty())
	})

	It("refuses a region that is not among --regions", func() {
		err := c.Create(ctx, &storagev1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: "on-mars"}, Spec: storagev1.BucketSpec{Region: "mars-1"}})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(`spec.region: Unsupported value: "mars-1"`))

		By("on update too")
		create(&storagev1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: "moving"}, Spec: storagev1.BucketSpec{Region: "us-east-1"}})
		b := get("moving", &storagev1.Bucket{}).(*storagev1.Bucket)
		b.Spec.Region = "mars-1"
		err = c.Update(ctx, b)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	})

	// The suite's server has a default region; the validator alone shows
	// what one without it refuses.
	It("refuses a Bucket without a region when there is no default region", func() {
		b := &storagev1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: "nowhere"}}
		Expect((&BucketCustomDefaulter{}).Default(ctx, b)).To(Succeed())
		_, err := (&BucketCustomValidator{Regions: regions}).ValidateCreate(ctx, b)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("spec.region: Required value"))
	})

	It("warns when a Bucket comes to keep its bucket after its deletion", func() {
		create(&storagev1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: "retained"},
			Spec: storagev1.BucketSpec{Region: "eu-west-1", DeletionPolicy: storagev1.DeletionPolicyRetain}})
		Expect(recorder.take()).To(ConsistOf(ContainSubstring("spec.deletionPolicy: Retain")))
		b := get("retained", &storagev1.Bucket{}).(*storagev1.Bucket)
		b.Spec.Versioning = true
		Expect(c.Update(ctx, b)).To(Succeed())
		Expect(recorder.take()).To(BeEmpty(), "no warning while the policy stays Retain")

		create(&storagev1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: "retained-later"}, Spec: storagev1.BucketSpec{Region: "eu-west-1"}})
		Expect(recorder.take()).To(BeEmpty())
		b = get("retained-later", &storagev1.Bucket{}).(*storagev1.Bucket)
		b.Spec.DeletionPolicy = storagev1.DeletionPolicyRetain
		Expect(c.Update(ctx, b)).To(Succeed())
		Expect(recorder.take()).To(ConsistOf(ContainSubstring("spec.deletionPolicy: Retain")))
	})

	It("serves v1alpha1, keeping the deletion policy in an annotation", func() {
		create(&storagev1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: "both-versions"},
			Spec: storagev1.BucketSpec{Region: "us-east-1", DeletionPolicy: storagev1.DeletionPolicyRetain}})
		old := get("both-versions", &storagev1alpha1.Bucket{}).(*storagev1alpha1.Bucket)
		Expect(old.Spec).To(Equal(storagev1alpha1.BucketSpec{Region: "us-east-1"}))
		Expect(old.Annotations).To(HaveKeyWithValue(storagev1alpha1.AnnotationDeletionPolicy, "Retain"))

		By("writing through v1alpha1, the policy stays")
		old.Spec.Versioning = true
		Expect(c.Update(ctx, old)).To(Succeed())
		b := get("both-versions", &storagev1.Bucket{}).(*storagev1.Bucket)
		Expect(b.Spec).To(Equal(storagev1.BucketSpec{Region: "us-east-1", Versioning: true, DeletionPolicy: storagev1.DeletionPolicyRetain}))
		Expect(b.Annotations).NotTo(HaveKey(storagev1alpha1.AnnotationDeletionPolicy))

		By("a v1alpha1 client sets the policy with the annotation, or gets the default")
		create(&storagev1alpha1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: "old-client",
			Annotations: map[string]string{storagev1alpha1.AnnotationDeletionPolicy: "Retain"}}, Spec: storagev1alpha1.BucketSpec{Region: "eu-west-1"}})
		Expect(get("old-client", &storagev1.Bucket{})).To(HaveField("Spec.DeletionPolicy", storagev1.DeletionPolicyRetain))
		create(&storagev1alpha1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: "old-client-default"}, Spec: storagev1alpha1.BucketSpec{Region: "eu-west-1"}})
		Expect(get("old-client-default", &storagev1.Bucket{})).To(HaveField("Spec.DeletionPolicy", storagev1.DeletionPolicyDelete))
	})
})
