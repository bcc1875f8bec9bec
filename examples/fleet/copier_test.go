package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/queue/queuetest"
)

const waitFor = 30 * time.Second

type world struct {
	mgmt   *fake.Clientset
	report queuetest.Provider

	mu      sync.Mutex
	members map[string]*fake.Clientset
}

func (w *world) member(name string) *fake.Clientset {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.members[name]
}

// client is the fleet's client constructor: a member without a fake is
// unreachable.
func (w *world) client(_ context.Context, name string, _ *rest.Config) (kubernetes.Interface, error) {
	if c := w.member(name); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("dial tcp: lookup %s: no such host", name)
}

// startCopier starts the copier with the members of memberNames (a fake
// clientset each), reported and synced, and returns once they are engaged.
func startCopier(t *testing.T, memberNames ...string) *world {
	w, c, mgmtInformers := newWorld(t, memberNames...)
	for _, name := range memberNames {
		w.report.Set(name, &rest.Config{Host: "https://" + name})
	}
	w.report.Synced()
	queuetest.StartFleet(t, c.fleet, []queuetest.Controller{c.copies, c.status}, mgmtInformers)
	return w
}

// startUnsynced starts the copier with a fake clientset for each of
// memberNames; its provider has reported nothing yet.
func startUnsynced(t *testing.T, memberNames ...string) *world {
	w, c, mgmtInformers := newWorld(t, memberNames...)
	queuetest.Start(t, c.status, operator.WithControllers(c.fleet, c.copies), mgmtInformers)
	return w
}

// newWorld builds the copier over a fake clientset for the management
// cluster and one for each of memberNames, and returns the informers of
// the management cluster to run it with.
func newWorld(t *testing.T, memberNames ...string) (*world, *copier, operator.Option) {
	w := &world{mgmt: fake.NewClientset(), members: map[string]*fake.Clientset{}}
	for _, name := range memberNames {
		w.members[name] = fake.NewClientset()
	}
	factory := informers.NewSharedInformerFactoryWithOptions(w.mgmt, 0, informers.WithNamespace("app"))
	c, err := newCopier(w.mgmt, factory.Core().V1().ConfigMaps(), &w.report, []multicluster.Option{multicluster.WithClients(w.client)})
	require.NoError(t, err)
	return w, c, operator.WithInformers(factory)
}

func source(data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings", Labels: map[string]string{LabelCopy: "true"}},
		Data: map[string]string{"color": data}}
}

// copyIn returns the data of the copy in a member, "" if there is none.
func (w *world) copyIn(cluster string) string {
	cm, err := w.member(cluster).CoreV1().ConfigMaps("app").Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return cm.Data["color"]
}

func (w *world) states() map[string]string {
	src, err := w.mgmt.CoreV1().ConfigMaps("app").Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return maps.Clone(src.Annotations)
}

func TestCopier(t *testing.T) {
	ctx := context.Background()
	w := startCopier(t, "east", "west")
	_, err := w.mgmt.CoreV1().ConfigMaps("app").Create(ctx, source("blue"), metav1.CreateOptions{})
	require.NoError(t, err)
	for _, cluster := range []string{"east", "west"} {
		require.Eventually(t, func() bool { return w.copyIn(cluster) == "blue" }, waitFor, time.Millisecond, cluster)
	}
	synced := map[string]string{StatusPrefix + "east": StateSynced, StatusPrefix + "west": StateSynced}
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(synced, w.states()) }, waitFor, time.Millisecond)

	// A change of the source reaches every copy.
	_, err = w.mgmt.CoreV1().ConfigMaps("app").Update(ctx, source("green"), metav1.UpdateOptions{})
	require.NoError(t, err)
	for _, cluster := range []string{"east", "west"} {
		require.Eventually(t, func() bool { return w.copyIn(cluster) == "green" }, waitFor, time.Millisecond, cluster)
	}

	// A member that leaves is no longer written to, and its state goes.
	w.report.Delete("west")
	require.Eventually(t, func() bool { _, ok := w.states()[StatusPrefix+"west"]; return !ok }, waitFor, time.Millisecond)
	w.member("west").ClearActions()
	_, err = w.mgmt.CoreV1().ConfigMaps("app").Update(ctx, source("red"), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return w.copyIn("east") == "red" }, waitFor, time.Millisecond)
	assert.Equal(t, "green", w.copyIn("west"), "the member that left was written to")

	// A source that goes takes its copies with it.
	require.NoError(t, w.mgmt.CoreV1().ConfigMaps("app").Delete(ctx, "settings", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return w.copyIn("east") == "" }, waitFor, time.Millisecond)
	for _, a := range w.member("west").Actions() {
		assert.Contains(t, []string{"get", "list", "watch"}, a.GetVerb(), "written to the member that left: %v", a)
	}
}

// A ConfigMap of a source's name that is not a copy is left alone, with a
// Warning event beside it and the conflict in the source's state.
func TestCopierLeavesOthersConfigMapsAlone(t *testing.T) {
	ctx := context.Background()
	w := startCopier(t)
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"}, Data: map[string]string{"color": "theirs"}}
	w.mu.Lock()
	w.members["east"] = fake.NewClientset(theirs)
	w.mu.Unlock()
	w.report.Set("east", &rest.Config{Host: "https://east"})
	_, err := w.mgmt.CoreV1().ConfigMaps("app").Create(ctx, source("blue"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return w.states()[StatusPrefix+"east"] == fmt.Sprintf("%s: %s", StateConflict, errNotACopy)
	}, waitFor, time.Millisecond)
	assert.Equal(t, "theirs", w.copyIn("east"))
	require.Eventually(t, func() bool {
		evs, err := w.member("east").CoreV1().Events("app").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, e := range evs.Items {
			if e.Reason == ReasonConflict && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == "settings" {
				return true
			}
		}
		return false
	}, waitFor, 10*time.Millisecond, "a Warning event in the member")
}

// A member that cannot be reached, or that the provider refused, is
// reported on the sources as soon as the fleet knows it, and synced once it
// is reachable: its changes reach the states, nothing polls for them.
func TestCopierReportsUnreachableMembers(t *testing.T) {
	for name, report := range map[string]func(*world){
		"no connection": func(w *world) { w.report.Set("gone", &rest.Config{Host: "https://gone"}) }, // no client for it
		"refused":       func(w *world) { w.report.Refuse("gone", errors.New("kubeconfig runs a command")) },
	} {
		t.Run(name, func(t *testing.T) {
			w := startCopier(t)
			_, err := w.mgmt.CoreV1().ConfigMaps("app").Create(context.Background(), source("blue"), metav1.CreateOptions{})
			require.NoError(t, err)
			report(w)
			require.Eventually(t, func() bool { return strings.HasPrefix(w.states()[StatusPrefix+"gone"], StateUnreachable+": ") }, waitFor, time.Millisecond, "%v", w.states())
			w.mu.Lock()
			w.members["gone"] = fake.NewClientset()
			w.mu.Unlock()
			w.report.Set("gone", &rest.Config{Host: "https://gone-again"})
			require.Eventually(t, func() bool { return w.states()[StatusPrefix+"gone"] == StateSynced }, waitFor, time.Millisecond, "%v", w.states())
		})
	}
}
