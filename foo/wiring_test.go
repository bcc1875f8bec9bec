package foo_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
	"github.com/ctrlkit/ctrlkit/foo"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// A controller that fails to be wired, or is never run, leaves no handler on
// the shared informers and no goroutine behind: nothing for the caller to
// clean up.
func TestNewControllerLeavesNothingBehind(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	tests := []struct {
		name    string
		opts    []queue.Option
		wantErr bool
	}{
		{name: "wiring fails", opts: []queue.Option{queue.WithWorkers(0)}, wantErr: true},
		{name: "never run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube, foos := kubefake.NewClientset(), foofake.NewClientset()
			deployments := kubeinformers.NewSharedInformerFactory(kube, 0).Apps().V1().Deployments()
			fooInf := fooinformers.NewSharedInformerFactory(foos, 0).Samplecontroller().V1alpha1().Foos()
			deployCapture := &capturingInformer{SharedIndexInformer: deployments.Informer()}
			fooCapture := &capturingInformer{SharedIndexInformer: fooInf.Informer()}

			ctrl, err := foo.NewController(reconciletest.Context(t), kube, foos,
				deploymentInformer{TypedDeploymentInformer: deployments, inf: deployCapture},
				fooInformer{TypedFooInformer: fooInf, inf: fooCapture}, eventstest.NewRecorder(), tt.opts...)
			if tt.wantErr {
				require.Error(t, err)
				assert.Nil(t, ctrl)
			} else {
				require.NoError(t, err)
				assert.False(t, ctrl.HasSynced(), "a controller that never ran has not synced")
			}
			assert.Empty(t, deployCapture.handlers, "no handler registered on the Deployment informer")
			assert.Empty(t, fooCapture.handlers, "no handler registered on the Foo informer")
		})
	}
}
