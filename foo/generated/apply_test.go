package generated_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	fooac "github.com/ctrlkit/ctrlkit/foo/generated/applyconfiguration/samplecontroller/v1alpha1"
	"github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
)

// The generated fake's NewClientset serves Foos with server-side apply as an
// API server does, because the apply configurations embed the Foo's OpenAPI
// schema: an apply creates and then updates the fields its manager owns, a
// second manager that changes those fields is refused with a conflict
// unless it forces, the status is applied on its own, and ExtractFoo gives
// back exactly what one manager applied. The same holds with Strict, which
// also records status applies under the status subresource.
func TestNewClientsetServerSideApply(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(map[bool]string{false: "NewClientset", true: "Strict"}[strict], func(t *testing.T) {
			ctx := t.Context()
			client := fake.NewClientset()
			if strict {
				reconciletest.Strict(client)
			}
			foos := client.SamplecontrollerV1alpha1().Foos("default")

			created, err := foos.Apply(ctx, fooac.Foo("web", "default").
				WithSpec(fooac.FooSpec().WithDeploymentName("web").WithReplicas(2)),
				metav1.ApplyOptions{FieldManager: "author"})
			require.NoError(t, err, "an apply creates the Foo")
			assert.Equal(t, "web", created.Spec.DeploymentName)
			assert.Equal(t, int32(2), *created.Spec.Replicas)
			if strict {
				assert.NotEmpty(t, created.ResourceVersion, "Strict stamps a resourceVersion")
				assert.NotEmpty(t, created.UID, "Strict stamps a UID")
			}

			_, err = foos.Apply(ctx, fooac.Foo("web", "default").
				WithSpec(fooac.FooSpec().WithDeploymentName("web").WithReplicas(5)),
				metav1.ApplyOptions{FieldManager: "someone-else"})
			require.Error(t, err)
			assert.True(t, apierrors.IsConflict(err), "a field of another manager is a conflict: %v", err)

			forced, err := foos.Apply(ctx, fooac.Foo("web", "default").
				WithSpec(fooac.FooSpec().WithDeploymentName("web").WithReplicas(5)),
				metav1.ApplyOptions{FieldManager: "someone-else", Force: true})
			require.NoError(t, err)
			assert.Equal(t, int32(5), *forced.Spec.Replicas, "a forced apply takes the field over")

			withStatus, err := foos.ApplyStatus(ctx, fooac.Foo("web", "default").
				WithStatus(fooac.FooStatus().WithAvailableReplicas(1).WithConditions(
					metav1ac.Condition().WithType(samplev1alpha1.ConditionReady).WithStatus(metav1.ConditionFalse).
						WithReason(samplev1alpha1.ReasonDeploymentNotReady).WithMessage("1 of 5").
						WithLastTransitionTime(metav1.Now()))),
				metav1.ApplyOptions{FieldManager: "controller"})
			require.NoError(t, err)
			assert.Equal(t, int32(1), withStatus.Status.AvailableReplicas)
			assert.Equal(t, int32(5), *withStatus.Spec.Replicas, "the status apply leaves the spec alone")

			again, err := foos.ApplyStatus(ctx, fooac.Foo("web", "default").
				WithStatus(fooac.FooStatus().WithAvailableReplicas(5)),
				metav1.ApplyOptions{FieldManager: "controller"})
			require.NoError(t, err, "a manager's second status apply is not in conflict with its first")
			assert.Equal(t, int32(5), again.Status.AvailableReplicas)
			assert.Empty(t, again.Status.Conditions, "a field the manager no longer applies is removed")

			got, err := foos.Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			if strict {
				// client-go's fake records status applies under the main
				// resource; Strict records them under status, as the API
				// server does, so that ExtractFooStatus finds them.
				status, err := fooac.ExtractFooStatus(got, "controller")
				require.NoError(t, err)
				require.NotNil(t, status.Status)
				assert.Equal(t, int32(5), *status.Status.AvailableReplicas)
			}
			mine, err := fooac.ExtractFoo(got, "someone-else")
			require.NoError(t, err)
			require.NotNil(t, mine.Spec)
			assert.Equal(t, int32(5), *mine.Spec.Replicas, "the forcing manager owns replicas")
			assert.Nil(t, mine.Status, "and none of the status")
			author, err := fooac.ExtractFoo(got, "author")
			require.NoError(t, err)
			require.NotNil(t, author.Spec)
			assert.Equal(t, "web", *author.Spec.DeploymentName, "the author still owns deploymentName")
			assert.Nil(t, author.Spec.Replicas, "and no longer replicas")
		})
	}
}
