package e2e

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	fleetv1alpha1 "github.com/ctrlkit/ctrlkit/examples/configset/apis/fleet/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/configset/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/kubeconfig"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

// TestConfigSet runs examples/configset against three API servers: a
// management cluster holding the ConfigSets and the members' kubeconfig
// Secrets, and two member clusters. A ConfigSet reaches both members and
// its status lists both Applied under Ready=True; the second member's API
// server is killed (its entry turns Unreachable, Ready=False) and the
// change made meanwhile reaches the first member only; once it is back it
// gets the change too and Ready is True again; the ConfigSet's deletion
// removes its ConfigMaps from both members before it goes.
func TestConfigSet(t *testing.T) {
	t.Parallel()
	root, err := repo.Root()
	require.NoError(t, err)
	waitBinary := buildInBackground(t, root, "configset", true)
	const user = "fleet-member"
	cps := map[string]*controlplane.ControlPlane{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range []string{"mgmt", "east", "west"} {
		opts := controlplane.Options{Users: []controlplane.User{{Name: user, Groups: []string{"system:masters"}}}}
		if name == "mgmt" {
			opts = controlplane.Options{CRDs: []string{filepath.Join(root, "examples", "configset", "deploy", "crd")}}
		}
		wg.Go(func() {
			cp := controlplane.StartT(t, opts)
			mu.Lock()
			defer mu.Unlock()
			cps[name] = cp
		})
	}
	wg.Wait()
	require.Len(t, cps, 3)
	bin := waitBinary()
	ctx := t.Context()
	mgmt, err := kubernetes.NewForConfig(cps["mgmt"].Config())
	require.NoError(t, err)
	sets, err := versioned.NewForConfig(cps["mgmt"].Config())
	require.NoError(t, err)
	members := map[string]kubernetes.Interface{}
	for _, ns := range []string{flSystem, flApp} {
		_, err := mgmt.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, name := range []string{"east", "west"} {
		members[name], err = kubernetes.NewForConfig(cps[name].Config())
		require.NoError(t, err)
		cfg, err := cps[name].UserConfig(user)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), name+".kubeconfig")
		require.NoError(t, controlplane.WriteKubeconfig(path, cfg, name))
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		_, err = mgmt.CoreV1().Secrets(flSystem).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: flSystem, Name: name,
			Labels: map[string]string{kubeconfig.Label: ""}}, Data: map[string][]byte{kubeconfig.DataKey: data}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	path := filepath.Join(t.TempDir(), "mgmt.kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(path, cps["mgmt"].Config(), "mgmt"))
	p := startProcess(t, "configset", bin, "--kubeconfig="+path, "--members-namespace="+flSystem,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "-v=2")

	_, err = sets.FleetV1alpha1().ConfigSets(flApp).Create(ctx, &fleetv1alpha1.ConfigSet{ObjectMeta: metav1.ObjectMeta{Namespace: flApp, Name: "settings"},
		Spec: fleetv1alpha1.ConfigSetSpec{Data: map[string]string{"version": "v1"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// wait waits until the members hold version (those of want that are
	// Applied) and the status lists want's reasons under ready.
	wait := func(version string, want map[string]string, ready metav1.ConditionStatus, timeout time.Duration) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			require.False(c, p.exited(), "the operator exited:\n%s", p.out.String())
			cs, err := sets.FleetV1alpha1().ConfigSets(flApp).Get(ctx, "settings", metav1.GetOptions{})
			require.NoError(c, err)
			require.Equal(c, cs.Generation, cs.Status.ObservedGeneration)
			got := map[string]string{}
			for _, m := range cs.Status.Members {
				got[m.Cluster] = m.Reason
			}
			assert.Equal(c, want, got)
			require.Len(c, cs.Status.Conditions, 1)
			assert.Equal(c, ready, cs.Status.Conditions[0].Status)
			for name, reason := range want {
				if reason != fleetv1alpha1.ReasonApplied {
					continue
				}
				cm, err := members[name].CoreV1().ConfigMaps(flApp).Get(ctx, "settings", metav1.GetOptions{})
				require.NoError(c, err, name)
				assert.Equal(c, version, cm.Data["version"], name)
				assert.Equal(c, fleetv1alpha1.ManagedBy, cm.Labels[fleetv1alpha1.LabelManagedBy], name)
			}
		}, timeout, pollEvery, "%s: %v", version, want)
	}
	applied := map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": fleetv1alpha1.ReasonApplied}
	wait("v1", applied, metav1.ConditionTrue, waitTimeout)

	// west's API server dies: Unreachable (three failed probes, 10 s
	// apart); a change meanwhile reaches east, and west once it is back.
	require.NoError(t, cps["west"].Kill(controlplane.KubeAPIServer))
	_, err = sets.FleetV1alpha1().ConfigSets(flApp).Patch(ctx, "settings", types.MergePatchType, []byte(`{"spec":{"data":{"version":"v2"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	wait("v2", map[string]string{"east": fleetv1alpha1.ReasonApplied, "west": multicluster.ReasonUnreachable}, metav1.ConditionFalse, 2*waitTimeout)
	require.NoError(t, cps["west"].Restart(ctx, controlplane.KubeAPIServer))
	wait("v2", applied, metav1.ConditionTrue, 2*waitTimeout)

	// The deletion removes the ConfigMaps from both members, then the ConfigSet goes.
	require.NoError(t, sets.FleetV1alpha1().ConfigSets(flApp).Delete(ctx, "settings", metav1.DeleteOptions{}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := sets.FleetV1alpha1().ConfigSets(flApp).Get(ctx, "settings", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "the ConfigSet is gone: %v", err)
		for name, kube := range members {
			_, err := kube.CoreV1().ConfigMaps(flApp).Get(ctx, "settings", metav1.GetOptions{})
			assert.True(c, apierrors.IsNotFound(err), "the ConfigMap in %s is gone: %v", name, err)
		}
	}, waitTimeout, pollEvery)
}
