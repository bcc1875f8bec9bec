package main

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
)

// gone is the kubeconfig of a member whose API server does not answer.
var gone = []byte(`apiVersion: v1
kind: Config
clusters: [{name: gone, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: gone, context: {cluster: gone}}]
current-context: gone
`)

const memberLabel = "multicluster.ctrlkit.io/kubeconfig"

var _ = Describe("ConfigSet operator", func() {
	var (
		namespace, membersNamespace string
		stop                        context.CancelFunc
		stopped                     chan struct{}
	)

	BeforeEach(func() {
		for _, ns := range []*string{&namespace, &membersNamespace} {
			obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fleet-"}}
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			*ns = obj.Name
		}
		mgr, err := NewManager(ctx, cfg, Options{MembersNamespace: membersNamespace, MembersLabel: memberLabel, MembersDataKey: "kubeconfig", Workers: 2},
			ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
		Expect(err).NotTo(HaveOccurred())
		var mgrCtx context.Context
		mgrCtx, stop = context.WithCancel(ctx)
		stopped = make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(stopped)
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()
	})

	AfterEach(func() {
		stop()
		Eventually(stopped).Should(BeClosed())
	})

	join := func(name string, kubeconfig []byte) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: membersNamespace, Name: name, Labels: map[string]string{memberLabel: "true"}}}
		_, err := ctrl.CreateOrUpdate(ctx, k8sClient, secret, func() error {
			secret.Data = map[string][]byte{"kubeconfig": kubeconfig}
			return nil
		})
		Expect(err).NotTo(HaveOccurred())
	}
	key := func() types.NamespacedName { return types.NamespacedName{Namespace: namespace, Name: "settings"} }
	newConfigSet := func(color string, members ...string) *fleetv1alpha1.ConfigSet {
		return &fleetv1alpha1.ConfigSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "settings"},
			Spec: fleetv1alpha1.ConfigSetSpec{Data: map[string]string{"color": color}, Members: members}}
	}
	// dataIn returns the data of the ConfigMap in a member, nil if there is none.
	dataIn := func(member string) func() map[string]string {
		return func() map[string]string {
			var cm corev1.ConfigMap
			if err := members[member].Get(ctx, key(), &cm); err != nil {
				return nil
			}
			return cm.Data
		}
	}
	// status returns the per-member reasons and the Ready condition's
	// status and reason, once the status is of the current generation.
	status := func(g Gomega) (map[string]string, string) {
		var cs fleetv1alpha1.ConfigSet
		g.Expect(k8sClient.Get(ctx, key(), &cs)).To(Succeed())
		g.Expect(cs.Status.ObservedGeneration).To(Equal(cs.Generation))
		reasons, ready := map[string]string{}, ""
		for _, m := range cs.Status.Members {
			reasons[m.Cluster] = m.Reason
		}
		for _, c := range cs.Status.Conditions {
			ready = string(c.Status) + "/" + c.Reason
		}
		return reasons, ready
	}
	expectStatus := func(reasons map[string]string, ready string) {
		Eventually(func(g Gomega) {
			got, r := status(g)
			g.Expect(got).To(Equal(reasons))
			g.Expect(r).To(Equal(ready))
		}).Should(Succeed())
	}

	It("applies a ConfigSet to every member, follows it, and cleans up", func() {
		join("east", kubeconfigs["east"])
		join("west", kubeconfigs["west"])
		Expect(k8sClient.Create(ctx, newConfigSet("blue"))).To(Succeed())
		expectStatus(map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": fleetv1alpha1.ReasonApplied}, "True/"+ReasonAllMembersReady)
		Expect(dataIn("east")()).To(Equal(map[string]string{"color": "blue"}))
		Expect(dataIn("west")()).To(Equal(map[string]string{"color": "blue"}))
		var cs fleetv1alpha1.ConfigSet
		Expect(k8sClient.Get(ctx, key(), &cs)).To(Succeed())
		Expect(cs.Status.ReadyMembers).To(BeEquivalentTo(2))
		Expect(cs.Status.TotalMembers).To(BeEquivalentTo(2))
		Expect(cs.Finalizers).To(ContainElement(fleetv1alpha1.Finalizer))

		By("following a change of the spec, and leaving the members no longer named")
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"data":{"color":"green"},"members":["east"]}}`))
		Expect(k8sClient.Patch(ctx, newConfigSet("green"), patch)).To(Succeed())
		expectStatus(map[string]string{"east": fleetv1alpha1.ReasonApplied}, "True/"+ReasonAllMembersReady)
		Expect(dataIn("east")()).To(Equal(map[string]string{"color": "green"}))
		Eventually(dataIn("west")).Should(BeNil())

		By("removing the ConfigMaps of a ConfigSet deleted, then its finalizer")
		Expect(k8sClient.Delete(ctx, newConfigSet(""))).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, key(), &fleetv1alpha1.ConfigSet{})) }).Should(BeTrue())
		Expect(dataIn("east")()).To(BeNil())
	})

	It("leaves alone a ConfigMap that is not the operator's", func() {
		east := members["east"]
		Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
		Expect(east.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "settings"},
			Data: map[string]string{"color": "theirs"}})).To(Succeed())
		join("east", kubeconfigs["east"])
		join("west", kubeconfigs["west"])
		Expect(k8sClient.Create(ctx, newConfigSet("blue"))).To(Succeed())
		expectStatus(map[string]string{"east": fleetv1alpha1.ReasonConflict, "west": fleetv1alpha1.ReasonApplied}, "False/"+ReasonMembersNotReady)
		Expect(dataIn("east")()).To(Equal(map[string]string{"color": "theirs"}))
		Eventually(func(g Gomega) {
			var events eventsv1.EventList
			g.Expect(k8sClient.List(ctx, &events, client.InNamespace(namespace))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(HaveField("Type", corev1.EventTypeWarning),
				HaveField("Reason", ReasonMembersNotReady), HaveField("Regarding.Name", "settings"))))
		}).Should(Succeed())
	})

	It("reports a member that does not answer, until it does", func() {
		join("east", kubeconfigs["east"])
		Expect(k8sClient.Create(ctx, newConfigSet("blue"))).To(Succeed())
		expectStatus(map[string]string{"east": fleetv1alpha1.ReasonApplied}, "True/"+ReasonAllMembersReady)
		join("west", gone)
		expectStatus(map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": ReasonUnreachable}, "False/"+ReasonMembersUnreachable)
		join("west", kubeconfigs["west"])
		expectStatus(map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": fleetv1alpha1.ReasonApplied}, "True/"+ReasonAllMembersReady)
		Expect(dataIn("west")()).To(Equal(map[string]string{"color": "blue"}))
	})
})
