package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	storagev1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	"github.com/ctrlkit/ctrlkit/examples/bucket/store"
)

var _ = Describe("Bucket Controller", func() {
	var (
		storeClient      *store.Client
		down, lost, deaf atomic.Bool
		stop             context.CancelFunc
		stopped          chan struct{}
	)

	startManager := func(resync time.Duration) {
		down.Store(false)
		lost.Store(false)
		deaf.Store(false)
		srv, err := store.NewServer(filepath.Join(GinkgoT().TempDir(), "buckets.json"))
		Expect(err).NotTo(HaveOccurred())
		httpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if down.Load() || deaf.Load() && r.URL.Path == "/changes" {
				http.Error(w, `{"error":"down for maintenance"}`, http.StatusServiceUnavailable)
				return
			}
			if lost.Load() {
				http.NotFound(w, r)
				return
			}
			srv.ServeHTTP(w, r)
		}))
		storeClient = store.NewClient(httpSrv.URL, nil)
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
			Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
		Expect(err).NotTo(HaveOccurred())
		r := &BucketReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("bucket-operator"), Store: storeClient, Resync: resync}
		Expect(r.SetupWithManager(mgr, 2)).To(Succeed())
		var mgrCtx context.Context
		mgrCtx, stop = context.WithCancel(ctx)
		stopped = make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(stopped)
			defer func() { srv.Close(); httpSrv.Close() }()
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()
	}

	AfterEach(func() {
		stop()
		Eventually(stopped).Should(BeClosed())
	})

	create := func(name, region string) {
		Expect(k8sClient.Create(ctx, &storagev1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.BucketSpec{Region: region}})).To(Succeed())
	}
	bucket := func(name string) *storagev1.Bucket {
		var b storagev1.Bucket
		if err := k8sClient.Get(ctx, types.NamespacedName{Name: name}, &b); apierrors.IsNotFound(err) {
			return nil
		} else {
			Expect(err).NotTo(HaveOccurred())
		}
		return &b
	}
	ready := func(name string) func(g Gomega) *metav1.Condition {
		return func(g Gomega) *metav1.Condition {
			b := bucket(name)
			g.Expect(b).NotTo(BeNil())
			return meta.FindStatusCondition(b.Status.Conditions, storagev1.ConditionReady)
		}
	}
	stored := func(name string) func(g Gomega) store.Spec {
		return func(g Gomega) store.Spec {
			b, found, err := storeClient.Get(ctx, name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found).To(BeTrue())
			return b.Spec
		}
	}
	gone := func(name string) func() bool {
		return func() bool { return bucket(name) == nil }
	}
	warnings := func(name, reason string) []eventsv1.Event {
		var events eventsv1.EventList
		Expect(k8sClient.List(ctx, &events, client.MatchingFields{"regarding.name": name})).To(Succeed())
		var out []eventsv1.Event
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && (reason == "" || e.Reason == reason) && e.DeletionTimestamp == nil {
				out = append(out, e)
			}
		}
		return out
	}
	reconcileErrors := func() float64 {
		families, err := ctrlmetrics.Registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		for _, f := range families {
			if f.GetName() == "controller_runtime_reconcile_errors_total" {
				for _, m := range f.GetMetric() {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}

	It("follows a Bucket from creation to deletion", func() {
		startManager(time.Hour) // only the notifications restore changed buckets
		create("photos", "eu-west-1")
		Eventually(stored("photos")).Should(Equal(store.Spec{Region: "eu-west-1"}))
		Eventually(ready("photos")).Should(HaveField("Status", metav1.ConditionTrue))
		b := bucket("photos")
		Expect(b.Finalizers).To(Equal([]string{storagev1.Finalizer}))
		Expect(b.Status.ObservedGeneration).To(Equal(b.Generation))
		own, _, err := storeClient.Get(ctx, "photos")
		Expect(err).NotTo(HaveOccurred())
		Expect(own.Owner).To(Equal(string(b.UID)), "the bucket is owned by its Bucket")

		By("following a change of the spec")
		b.Spec.Versioning = true
		Expect(k8sClient.Update(ctx, b)).To(Succeed())
		Eventually(stored("photos")).Should(Equal(store.Spec{Region: "eu-west-1", Versioning: true}))

		By("restoring a bucket changed or removed behind its back")
		_, err = storeClient.Put(ctx, "photos", store.Spec{Region: "us-east-1"})
		Expect(err).NotTo(HaveOccurred())
		Eventually(stored("photos")).Should(Equal(store.Spec{Region: "eu-west-1", Versioning: true}))
		Expect(storeClient.Delete(ctx, "photos")).To(Succeed())
		Eventually(stored("photos")).Should(Equal(store.Spec{Region: "eu-west-1", Versioning: true}))

		By("deleting the bucket, then the Bucket")
		Expect(k8sClient.Delete(ctx, b)).To(Succeed())
		Eventually(gone("photos")).Should(BeTrue())
		_, found, err := storeClient.Get(ctx, "photos")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeFalse())
		Expect(warnings("photos", "")).To(BeEmpty(), "no Warning when all goes well")
	})

	It("leaves the bucket of a Bucket whose deletion policy is Retain", func() {
		startManager(time.Hour)
		Expect(k8sClient.Create(ctx, &storagev1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: "kept"},
			Spec: storagev1.BucketSpec{Region: "eu-west-1", DeletionPolicy: storagev1.DeletionPolicyRetain}})).To(Succeed())
		Eventually(stored("kept")).Should(Equal(store.Spec{Region: "eu-west-1"}))
		Eventually(func() []string { return bucket("kept").Finalizers }).Should(HaveLen(1))
		b := bucket("kept")

		Expect(k8sClient.Delete(ctx, b)).To(Succeed())
		Eventually(gone("kept")).Should(BeTrue())
		kept, found, err := storeClient.Get(ctx, "kept")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue(), "the bucket stays in the store")
		Expect(kept.Owner).To(Equal(string(b.UID)), "still owned by the deleted Bucket, so no other Bucket takes it over")
		Expect(warnings("kept", "")).To(BeEmpty())
	})

	DescribeTable("holds the finalizer while the store cannot delete the bucket",
		func(fail func(bool)) {
			startManager(time.Hour)
			create("logs", "eu-west-1")
			Eventually(stored("logs")).Should(Equal(store.Spec{Region: "eu-west-1"}))
			Eventually(func() []string { return bucket("logs").Finalizers }).Should(HaveLen(1))

			fail(true)
			Expect(k8sClient.Delete(ctx, bucket("logs"))).To(Succeed())
			Eventually(ready("logs")).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", storagev1.ReasonStoreUnavailable)))
			b := bucket("logs")
			Expect(b.DeletionTimestamp).NotTo(BeNil())
			Expect(b.Finalizers).To(Equal([]string{storagev1.Finalizer}), "the finalizer is held")
			var outage int
			Eventually(func() int { outage = len(warnings("logs", storagev1.ReasonStoreUnavailable)); return outage }).ShouldNot(BeZero())

			fail(false)
			Eventually(gone("logs")).Should(BeTrue(), "the Bucket goes once the store is back")
			_, found, err := storeClient.Get(ctx, "logs")
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeFalse())
			Expect(warnings("logs", storagev1.ReasonStoreUnavailable)).To(HaveLen(outage), "one Warning per outage, not one per retry")
		},
		Entry("the store answers 503", func(failing bool) { down.Store(failing) }),
		// A 404 that is not the store's "no such bucket" does not say the
		// bucket is gone: the finalizer stays until the store says so.
		Entry("a proxy answers a plain 404", func(failing bool) { lost.Store(failing) }),
	)

	// A bucket the operator did not create for this Bucket is left alone:
	// no write, one Warning and Ready=False, quiet periodic checks, and a
	// deletion of the Bucket that leaves the bucket in the store.
	DescribeTable("refuses a bucket it did not create",
		func(name string, seed func(name string)) {
			startManager(20 * time.Millisecond) // periodic checks come again and again
			seed(name)
			before, found, err := storeClient.Get(ctx, name)
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeTrue())
			create(name, "eu-west-1")
			Eventually(ready(name)).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", storagev1.ReasonBucketExists),
				HaveField("Message", ContainSubstring(name))))
			// A status write from a stale cache can record the refusal twice
			// (a retry after a conflict); once that has settled, the periodic
			// checks are quiet.
			errs := -1.0
			Eventually(func() bool { last := errs; errs = reconcileErrors(); return errs == last }).WithPolling(time.Second).Should(BeTrue(), "the errors settle")
			refusals := warnings(name, "")
			Expect(refusals).NotTo(BeEmpty())
			Expect(refusals[0].Reason).To(Equal(storagev1.ReasonBucketExists))
			Expect(refusals[0].Note).To(ContainSubstring(name))
			Consistently(reconcileErrors, time.Second).Should(Equal(errs), "no error at the periodic checks")
			Expect(warnings(name, "")).To(HaveLen(len(refusals)), "no Warning at the periodic checks")
			Expect(stored(name)(Default)).To(Equal(before.Spec), "the bucket is untouched")

			By("leaving the bucket in the store when the Bucket goes")
			Expect(k8sClient.Delete(ctx, bucket(name))).To(Succeed())
			Eventually(gone(name)).Should(BeTrue())
			after, found, err := storeClient.Get(ctx, name)
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeTrue())
			Expect(after).To(Equal(before), "the bucket is untouched")
		},
		Entry("created outside the operator", "shared", func(name string) {
			_, err := storeClient.Put(ctx, name, store.Spec{Region: "us-east-1", Versioning: true})
			Expect(err).NotTo(HaveOccurred())
		}),
		// Such as one whose finalizer was removed by hand before its bucket
		// was deleted.
		Entry("created for an earlier Bucket of the name", "shared-earlier", func(name string) {
			_, err := storeClient.PutAs(ctx, "uid-of-an-earlier-bucket", name, store.Spec{Region: "eu-west-1"})
			Expect(err).NotTo(HaveOccurred())
		}),
	)

	It("gives a refused Bucket its own bucket once the foreign one goes", func() {
		startManager(time.Hour)
		_, err := storeClient.Put(ctx, "mine-later", store.Spec{Region: "us-east-1"})
		Expect(err).NotTo(HaveOccurred())
		create("mine-later", "eu-west-1")
		Eventually(ready("mine-later")).Should(HaveField("Reason", storagev1.ReasonBucketExists))

		Expect(storeClient.Delete(ctx, "mine-later")).To(Succeed())
		Eventually(stored("mine-later")).Should(Equal(store.Spec{Region: "eu-west-1"}))
		own, _, err := storeClient.Get(ctx, "mine-later")
		Expect(err).NotTo(HaveOccurred())
		Expect(own.Owner).To(Equal(string(bucket("mine-later").UID)), "owned by the Bucket")
		Eventually(ready("mine-later")).Should(HaveField("Status", metav1.ConditionTrue))
		Expect(warnings("mine-later", "")).To(HaveEach(HaveField("Reason", storagev1.ReasonBucketExists)), "the Warning of the refusal only")

		Expect(k8sClient.Delete(ctx, bucket("mine-later"))).To(Succeed())
		Eventually(gone("mine-later")).Should(BeTrue())
		_, found, err := storeClient.Get(ctx, "mine-later")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeFalse(), "its own bucket goes with it")
	})

	It("restores a bucket at the periodic check", func() {
		startManager(50 * time.Millisecond)
		deaf.Store(true) // no notifications: only the periodic check wakes the controller
		create("assets", "ap-south-1")
		Eventually(stored("assets")).Should(Equal(store.Spec{Region: "ap-south-1"}))
		Expect(storeClient.Delete(ctx, "assets")).To(Succeed())
		Eventually(stored("assets")).Should(Equal(store.Spec{Region: "ap-south-1"}))
		Expect(k8sClient.Delete(ctx, bucket("assets"))).To(Succeed())
		Eventually(gone("assets")).Should(BeTrue())
	})
})
