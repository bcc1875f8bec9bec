package e2e

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/webhook"
)

// TestConnectToAValidatorWithoutWithConnectIsRefused: a validating
// webhook of pods not made WithConnect, whose configuration lists CONNECT
// on pods/exec, refuses the exec a real API server sends (kind
// PodExecOptions), saying WithConnect is missing, and never calls its
// validator, which is written for pods and would read the object.
func TestConnectToAValidatorWithoutWithConnectIsRefused(t *testing.T) {
	var called atomic.Bool
	h, err := webhook.Validating(func(_ context.Context, req webhook.Request[*corev1.Pod]) ([]string, field.ErrorList) {
		called.Store(true)
		if len(req.Object.Spec.Containers) == 0 {
			return nil, field.ErrorList{field.Required(field.NewPath("spec", "containers"), "")}
		}
		return nil, nil
	})
	require.NoError(t, err)
	last := execThrough(t, h)
	assert.Contains(t, last.Error(), "WithConnect", "the exec is refused, naming what is missing")
	assert.False(t, called.Load(), "the validator, written for pods, is not called")
}
