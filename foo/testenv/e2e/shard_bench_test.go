package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/foo/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/foo/testenv/internal/repo"
)

// BenchmarkShardedConvergence measures how long -convergence.foos new Foos
// (replicas 1) take to converge with examples/foo run as one replica and as
// three replicas with --sharded, on one full control plane, each in a fresh
// namespace; it reports the seconds and each replica's share of the
// reconciles. It belongs to `make bench-shard`, not `make test`.
func BenchmarkShardedConvergence(b *testing.B) {
	root, err := repo.Root()
	require.NoError(b, err)
	waitBinary := buildInBackground(b, root, "foo", false)
	cp := controlplane.StartT(b, controlplane.Options{
		Size: controlplane.Full, CRDs: []string{filepath.Join(root, "foo", "crd")},
		ExtraArgs: map[string][]string{
			controlplane.KubeControllerManager: kubeClientLimits,
			controlplane.KubeScheduler:         kubeClientLimits,
		},
	})
	bin := waitBinary()
	admin := unlimited(cp.Config())
	kube, err := kubernetes.NewForConfig(admin)
	require.NoError(b, err)
	fooClient, err := fooclientset.NewForConfig(admin)
	require.NoError(b, err)
	// The replicas run as the admin: this is about throughput, not RBAC
	// (TestSharding runs them with the roles of rbac.yaml).
	kubeconfig := cp.KubeconfigPath()
	_, err = kube.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: relLeaseNamespace}}, metav1.CreateOptions{})
	require.NoError(b, err)

	foos := *convergenceFoos
	for _, replicas := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			b.StopTimer()
			var seconds float64
			for i := range b.N {
				ns := fmt.Sprintf("shard-%d-%d", replicas, i)
				createNamespace(b.Context(), b, kube, ns, 15*time.Minute)
				procs := make([]*process, replicas)
				for r := range procs {
					metrics, health := freeAddress(b), freeAddress(b)
					procs[r] = startProcess(b, fmt.Sprintf("%s-%d", ns, r), bin, "--kubeconfig="+kubeconfig,
						"--metrics-bind-address="+metrics, "--health-probe-bind-address="+health,
						"--sharded", "--leader-elect-id="+ns, "--leader-elect-namespace="+relLeaseNamespace)
					procs[r].metricsURL, procs[r].healthURL = "http://"+metrics, "http://"+health
				}
				for _, p := range procs {
					waitControllerReady(b.Context(), b, p)
				}
				watch := watchConvergence(b.Context(), b, admin, ns, foos, nil)
				start := time.Now()
				require.NoError(b, runParallel(foos, convergenceClients, func(i int) error {
					name := fmt.Sprintf("foo-%d", i)
					_, err := fooClient.SamplecontrollerV1alpha1().Foos(ns).Create(b.Context(), &samplev1alpha1.Foo{
						ObjectMeta: metav1.ObjectMeta{Name: name},
						Spec:       samplev1alpha1.FooSpec{DeploymentName: name, Replicas: ptr.To[int32](1)},
					}, metav1.CreateOptions{})
					return err
				}))
				converged := watch.wait(b, time.Hour, func() error {
					for _, p := range procs {
						if err := running(p)(); err != nil {
							return err
						}
					}
					return nil
				})
				watch.stop()
				seconds += converged.Sub(start).Seconds()
				var shares []string
				for _, p := range procs {
					st, err := readControllerState(b.Context(), p)
					require.NoError(b, err)
					code, text, err := httpGet(b.Context(), p.metricsURL+"/metrics")
					require.NoError(b, err)
					require.Equal(b, 200, code)
					members, _ := metricSum(text, "ctrlkit_shard_members", nil)
					owned, _ := metricSum(text, "ctrlkit_shard_owned_keys", nil)
					shares = append(shares, fmt.Sprintf("%.0f (members %.0f, owned keys %.0f)", st.reconciles, members, owned))
				}
				b.Logf("%s: %d Foos converged in %s with %d replicas; reconciles per replica: %s", ns, foos,
					converged.Sub(start).Round(time.Millisecond), replicas, strings.Join(shares, ", "))
				for _, p := range procs {
					terminate(b, p, time.Minute)
				}
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(seconds/float64(b.N), "converge-s")
		})
	}
}
