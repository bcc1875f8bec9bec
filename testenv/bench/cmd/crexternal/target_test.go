package main

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ctrlkit/ctrlkit/examples/external/system"
)

var _ = Describe("Target Controller", func() {
	var (
		namespace string
		sys       *system.System
		stop      context.CancelFunc
		stopped   chan struct{}
	)

	startManager := func(resync time.Duration, capacity int, entries system.Entries) {
		sys = system.New(entries, capacity)
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{
			Scheme:     scheme,
			Metrics:    metricsserver.Options{BindAddress: "0"},
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
			Cache: cache.Options{
				DefaultNamespaces: map[string]cache.Config{namespace: {}},
				ByObject:          map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{managedBy: managerName})}},
			},
		})
		Expect(err).NotTo(HaveOccurred())
		r := &TargetReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("external-targets"), System: sys, Namespace: namespace}
		Expect(r.SetupWithManager(mgr, 2, resync)).To(Succeed())
		var mgrCtx context.Context
		mgrCtx, stop = context.WithCancel(ctx)
		stopped = make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(stopped)
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()
	}

	target := func(name string) func(g Gomega) map[string]string {
		return func(g Gomega) map[string]string {
			var cm corev1.ConfigMap
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: targetPrefix + name}, &cm)).To(Succeed())
			return cm.Data
		}
	}

	BeforeEach(func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "targets-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		namespace = ns.Name
	})

	AfterEach(func() {
		stop()
		Eventually(stopped).Should(BeClosed())
	})

	It("keeps a Target per entry of the system", func() {
		By("leaving alone a ConfigMap it does not manage")
		theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: targetPrefix + "theirs"}, Data: map[string]string{"k": "mine"}}
		Expect(k8sClient.Create(ctx, theirs)).To(Succeed())
		startManager(time.Hour, 16, system.Entries{"web": {"color": "blue"}, "theirs": {"k": "v"}})

		Eventually(target("web")).Should(Equal(map[string]string{"color": "blue"}))
		var web corev1.ConfigMap
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: targetPrefix + "web"}, &web)).To(Succeed())
		Expect(web.Labels).To(HaveKeyWithValue(managedBy, managerName))
		Eventually(func(g Gomega) {
			var events eventsv1.EventList
			g.Expect(k8sClient.List(ctx, &events, client.InNamespace(namespace))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(
				HaveField("Type", corev1.EventTypeNormal), HaveField("Reason", "Synced"))))
		}).Should(Succeed())
		Consistently(target("theirs"), time.Second).Should(Equal(map[string]string{"k": "mine"}))

		By("following a change and a new entry")
		sys.Set("web", map[string]string{"color": "green"})
		sys.Set("db", map[string]string{"size": "10"})
		Eventually(target("web")).Should(Equal(map[string]string{"color": "green"}))
		Eventually(target("db")).Should(Equal(map[string]string{"size": "10"}))

		By("undoing an edit of a Target")
		var db corev1.ConfigMap
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: targetPrefix + "db"}, &db)).To(Succeed())
		db.Data["size"] = "99"
		Expect(k8sClient.Update(ctx, &db)).To(Succeed())
		Eventually(target("db")).Should(Equal(map[string]string{"size": "10"}))

		By("deleting the Target of an entry that goes")
		sys.Delete("web")
		Eventually(func() bool {
			err := k8sClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: targetPrefix + "web"}, &corev1.ConfigMap{})
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
	})

	It("catches up with lost notifications at the periodic resync", func() {
		startManager(20*time.Millisecond, 1, system.Entries{"a": {"v": "1"}})
		Eventually(target("a")).Should(Equal(map[string]string{"v": "1"}))
		for i, v := range []string{"2", "3", "4", "5"} { // one notification fits, the others are dropped
			sys.Set("a", map[string]string{"v": v})
			sys.Set(fmt.Sprint("b", i), map[string]string{"v": v})
		}
		Eventually(target("a")).Should(Equal(map[string]string{"v": "5"}))
		Eventually(target("b3")).Should(Equal(map[string]string{"v": "5"}))
	})
})
