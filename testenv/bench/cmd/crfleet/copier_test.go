package main

import (
	"context"
	"time"

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
)

// gone is the kubeconfig of a member whose API server does not answer.
var gone = []byte(`apiVersion: v1
kind: Config
clusters: [{name: gone, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: gone, context: {cluster: gone}}]
current-context: gone
`)

var _ = Describe("ConfigMap copier", func() {
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
		mgr, err := NewManager(ctx, cfg, Options{Namespace: namespace, MembersNamespace: membersNamespace, Workers: 2, ProbeInterval: 100 * time.Millisecond},
			ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: ptr.To(true)}}, nil)
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
		Expect(k8sClient.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: membersNamespace, Name: name, Labels: map[string]string{MemberLabel: "true"}},
			Data:       map[string][]byte{"kubeconfig": kubeconfig},
		})).To(Succeed())
	}
	key := func() types.NamespacedName { return types.NamespacedName{Namespace: namespace, Name: "settings"} }
	newSource := func(color string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "settings", Labels: map[string]string{LabelCopy: "true"}},
			Data: map[string]string{"color": color}}
	}
	// recolor changes the source with a merge patch: the operator writes
	// its annotations meanwhile.
	recolor := func(color string) {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"color":"`+color+`"}}`))
		Expect(k8sClient.Patch(ctx, newSource(color), patch)).To(Succeed())
	}
	// copyIn returns the data of the copy in a member, "" if there is none.
	copyIn := func(member string) func() string {
		return func() string {
			var cm corev1.ConfigMap
			if err := members[member].Get(ctx, key(), &cm); err != nil {
				return ""
			}
			return cm.Data["color"]
		}
	}
	states := func(g Gomega) map[string]string {
		var src corev1.ConfigMap
		g.Expect(k8sClient.Get(ctx, key(), &src)).To(Succeed())
		return src.Annotations
	}

	It("copies a source to every member, follows it, and forgets a member that leaves", func() {
		join("east", kubeconfigs["east"])
		join("west", kubeconfigs["west"])
		Expect(k8sClient.Create(ctx, newSource("blue"))).To(Succeed())
		Eventually(copyIn("east")).Should(Equal("blue"))
		Eventually(copyIn("west")).Should(Equal("blue"))
		var cp corev1.ConfigMap
		Expect(members["east"].Get(ctx, key(), &cp)).To(Succeed())
		Expect(cp.Labels).To(HaveKeyWithValue(LabelCopiedBy, fleetName))
		Eventually(states).Should(Equal(map[string]string{StatusPrefix + "east": StateSynced, StatusPrefix + "west": StateSynced}))

		By("following a change of the source")
		recolor("green")
		Eventually(copyIn("east")).Should(Equal("green"))
		Eventually(copyIn("west")).Should(Equal("green"))

		By("no longer writing to a member that leaves, and removing its state")
		Expect(k8sClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: membersNamespace, Name: "west"}})).To(Succeed())
		Eventually(states).ShouldNot(HaveKey(StatusPrefix + "west"))
		recolor("red")
		Eventually(copyIn("east")).Should(Equal("red"))
		Consistently(copyIn("west"), time.Second).Should(Equal("green"))

		By("deleting the copies of a source that goes")
		Expect(k8sClient.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "settings"}})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(members["east"].Get(ctx, key(), &corev1.ConfigMap{}))
		}).Should(BeTrue())
		Expect(copyIn("west")()).To(Equal("green"), "the member that left was written to")
	})

	It("leaves alone a ConfigMap that is not a copy", func() {
		east := members["east"]
		Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
		Expect(east.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "settings"},
			Data: map[string]string{"color": "theirs"}})).To(Succeed())
		join("east", kubeconfigs["east"])
		Expect(k8sClient.Create(ctx, newSource("blue"))).To(Succeed())
		Eventually(states).Should(HaveKeyWithValue(StatusPrefix+"east", StateConflict+": "+errNotACopy.Error()))
		Expect(copyIn("east")()).To(Equal("theirs"))
		Eventually(func(g Gomega) {
			var events eventsv1.EventList
			g.Expect(east.List(ctx, &events, client.InNamespace(namespace))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(HaveField("Type", corev1.EventTypeWarning),
				HaveField("Reason", ReasonConflict), HaveField("Regarding.Name", "settings"))))
		}).Should(Succeed())
	})

	It("reports a member that does not answer", func() {
		join("east", kubeconfigs["east"])
		Expect(k8sClient.Create(ctx, newSource("blue"))).To(Succeed())
		Eventually(states).Should(HaveKeyWithValue(StatusPrefix+"east", StateSynced))
		join("gone", gone)
		Eventually(states).Should(HaveKeyWithValue(StatusPrefix+"gone", HavePrefix(StateUnreachable+": ")))
		Expect(states(Default)).To(HaveKeyWithValue(StatusPrefix+"east", StateSynced), "the other members go on")
	})
})
