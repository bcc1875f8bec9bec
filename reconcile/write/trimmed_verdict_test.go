package write_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
	"github.com/ctrlkit/ctrlkit/reconcile/write"
)

// webhookClient writes Deployments through a mutating webhook: hook
// changes the object a strategic merge patch makes, before it is stored,
// as an admission webhook or the API server's defaulting would.
type webhookClient struct {
	write.Client[*appsv1.Deployment]
	hook func(d *appsv1.Deployment)
}

func (c webhookClient) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*appsv1.Deployment, error) {
	if c.hook == nil || pt != types.StrategicMergePatchType || len(subresources) > 0 {
		return c.Client.Patch(ctx, name, pt, data, opts, subresources...)
	}
	live, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	before, err := json.Marshal(live)
	if err != nil {
		return nil, err
	}
	merged, err := strategicpatch.StrategicMergePatch(before, data, &appsv1.Deployment{})
	if err != nil {
		return nil, err
	}
	var d appsv1.Deployment
	if err := json.Unmarshal(merged, &d); err != nil {
		return nil, err
	}
	c.hook(&d)
	after, err := json.Marshal(&d)
	if err != nil {
		return nil, err
	}
	admitted, err := strategicpatch.CreateTwoWayMergePatch(before, after, &appsv1.Deployment{})
	if err != nil {
		return nil, err
	}
	// The request's resourceVersion stays its precondition.
	var sent, patch map[string]any
	if err := json.Unmarshal(data, &sent); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(admitted, &patch); err != nil {
		return nil, err
	}
	meta, _ := patch["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	if m, ok := sent["metadata"].(map[string]any); ok && m["resourceVersion"] != nil {
		meta["resourceVersion"] = m["resourceVersion"]
	}
	patch["metadata"] = meta
	if admitted, err = json.Marshal(patch); err != nil {
		return nil, err
	}
	return c.Client.Patch(ctx, name, pt, admitted, opts)
}

// pinReplicas is a webhook that keeps a Deployment at one replica.
func pinReplicas(d *appsv1.Deployment) { d.Spec.Replicas = ptrInt32(1) }

func ptrInt32(n int32) *int32 { return &n }

// container returns the container named name of d, or nil.
func container(d *appsv1.Deployment, name string) *corev1.Container {
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == name {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

// The verdict of an update of a trimmed object is judged on what its
// cache shows (and what mutate set): a change the server keeps is Updated,
// one a webhook undoes is Unchanged, traced or not, and a change the
// server makes on its own to what the cache shows costs at most one more
// write; every case settles, with no writes once the object is as the
// server keeps it.
func TestTrimmedUpdateVerdict(t *testing.T) {
	cases := []struct {
		name string
		// keep names fields the cache keeps besides the replicas and the
		// containers' names and images.
		keep []string
		// prepare changes the server's object before the first reconcile.
		prepare func(d *appsv1.Deployment)
		hook    func(d *appsv1.Deployment)
		mutate  func(d *appsv1.Deployment) error
		traced  bool
		// between runs after each reconcile's object reached the cache.
		between func(t *testing.T, e *deploymentEnv)
		// want is the verdict of each reconcile; writes counts the ones
		// that changed the server's object.
		want   []write.Change
		writes int
		check  func(t *testing.T, d *appsv1.Deployment)
	}{{
		name:   "changed and kept",
		mutate: nginx(2, "nginx:2"),
		want:   []write.Change{write.Updated, write.Unchanged, write.Unchanged},
		writes: 1,
		check: func(t *testing.T, d *appsv1.Deployment) {
			assert.Equal(t, int32(2), *d.Spec.Replicas)
			assert.Equal(t, "nginx:2", container(d, "nginx").Image)
		},
	}, {
		name:   "changed and kept, traced",
		mutate: nginx(2, "nginx:2"),
		traced: true,
		want:   []write.Change{write.Updated, write.Unchanged, write.Unchanged},
		writes: 1,
	}, {
		name:    "kept but zero in the cache, set by mutate and kept",
		prepare: func(d *appsv1.Deployment) { d.Spec.Replicas = nil },
		hook:    func(*appsv1.Deployment) {},
		mutate:  nginx(2, "nginx:1"),
		traced:  true,
		want:    []write.Change{write.Updated, write.Unchanged, write.Unchanged},
		writes:  1,
		check:   func(t *testing.T, d *appsv1.Deployment) { assert.Equal(t, int32(2), *d.Spec.Replicas) },
	}, {
		name:   "changed and undone, untraced",
		hook:   pinReplicas,
		mutate: nginx(2, "nginx:1"),
		want:   []write.Change{write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 0,
	}, {
		name:   "changed and undone, traced: the annotation is written once",
		hook:   pinReplicas,
		mutate: nginx(2, "nginx:1"),
		traced: true,
		want:   []write.Change{write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 1,
	}, {
		name: "a container mutate adds by name, undone, traced",
		hook: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = d.Spec.Template.Spec.Containers[:2] },
		mutate: func(d *appsv1.Deployment) error {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "logs", Image: "logs:1"})
			return nil
		},
		traced: true,
		want:   []write.Change{write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 1,
	}, {
		name: "changed and undone, a default added to a kept field the cache shows",
		keep: []string{"spec.template.spec.containers.imagePullPolicy"},
		prepare: func(d *appsv1.Deployment) {
			container(d, "sidecar").ImagePullPolicy = corev1.PullAlways
		},
		hook: func(d *appsv1.Deployment) {
			pinReplicas(d)
			if c := container(d, "nginx"); c.ImagePullPolicy == "" {
				c.ImagePullPolicy = corev1.PullIfNotPresent
			}
		},
		mutate: nginx(2, "nginx:1"),
		traced: true,
		// The default is a change the cache shows: the next write, of the
		// annotation alone, settles.
		want:   []write.Change{write.Updated, write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 2,
		check: func(t *testing.T, d *appsv1.Deployment) {
			assert.Equal(t, corev1.PullIfNotPresent, container(d, "nginx").ImagePullPolicy)
			assert.Equal(t, int32(1), *d.Spec.Replicas)
		},
	}, {
		name: "changed and undone, a default added to a field the cache shows on no container",
		keep: []string{"spec.template.spec.containers.imagePullPolicy"},
		hook: func(d *appsv1.Deployment) {
			pinReplicas(d)
			if c := container(d, "nginx"); c.ImagePullPolicy == "" {
				c.ImagePullPolicy = corev1.PullIfNotPresent
			}
		},
		mutate: nginx(2, "nginx:1"),
		traced: true,
		want:   []write.Change{write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 1,
	}, {
		name: "a webhook injects a container and undoes the change",
		hook: func(d *appsv1.Deployment) {
			pinReplicas(d)
			if container(d, "injected") == nil {
				d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "injected", Image: "mesh:1"})
			}
		},
		mutate: nginx(2, "nginx:1"),
		traced: true,
		want:   []write.Change{write.Updated, write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 2,
	}, {
		name:   "changed and undone, traced, the workload's controller records each generation in the status",
		keep:   []string{"status.observedGeneration"},
		hook:   pinReplicas,
		mutate: nginx(2, "nginx:1"),
		traced: true,
		between: func(t *testing.T, e *deploymentEnv) {
			d := e.server(t)
			if d.Status.ObservedGeneration == d.Generation {
				return
			}
			d.Status.ObservedGeneration = d.Generation
			_, err := e.kube.AppsV1().Deployments("ns").UpdateStatus(reconciletest.Context(t), d, metav1.UpdateOptions{})
			require.NoError(t, err)
			e.deliver(t)
		},
		want:   []write.Change{write.Unchanged, write.Unchanged, write.Unchanged},
		writes: 1,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newDeploymentEnvKeeping(t, tc.keep...)
			ctx := reconciletest.Context(t)
			if tc.prepare != nil {
				d := e.server(t)
				tc.prepare(d)
				_, err := e.kube.AppsV1().Deployments("ns").Update(ctx, d, metav1.UpdateOptions{})
				require.NoError(t, err)
				e.deliver(t)
			}
			tp := sdktrace.NewTracerProvider()
			defer func() { _ = tp.Shutdown(context.Background()) }()
			client := webhookClient{Client: e.client(), hook: tc.hook}
			var got []write.Change
			writes := 0
			for i := range tc.want {
				rctx, end := ctx, func() {}
				if tc.traced {
					var span trace.Span
					rctx, span = tp.Tracer("test").Start(ctx, fmt.Sprintf("reconcile %d", i+1))
					rctx, _ = tracing.WithWriteMark(rctx)
					end = func() { span.End() }
				}
				before := e.server(t).ResourceVersion
				_, change, err := e.objects.Ensure(rctx, client, webWant(), tc.mutate)
				end()
				require.NoError(t, err)
				got = append(got, change)
				if e.server(t).ResourceVersion != before {
					writes++
				}
				e.deliver(t)
				if tc.between != nil {
					tc.between(t, e)
				}
			}
			assert.Equal(t, tc.want, got, "the verdicts")
			assert.Equal(t, tc.writes, writes, "the writes that changed the object (annotation %q)", e.server(t).Annotations[tracing.Annotation])
			if tc.check != nil {
				tc.check(t, e.server(t))
			}
		})
	}
}
