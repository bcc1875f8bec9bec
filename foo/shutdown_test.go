package foo_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/events/eventstest"
	"github.com/ctrlkit/ctrlkit/foo"
	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
	foofake "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned/fake"
	fooinformers "github.com/ctrlkit/ctrlkit/foo/generated/informers/externalversions"
	"github.com/ctrlkit/ctrlkit/queue"
)

// TestShutdownDuringBurst sends SIGTERM to the process while the controller
// works through the initial burst of 1,000 Foos, with Deployment creates in
// flight, the way a binary that stops on signal.NotifyContext is stopped.
// Run returns within the shutdown timeout, no goroutine is left, nothing is
// written after Run returns, and no object is half-written: every
// Deployment is complete and belongs to a Foo whose status records it, and
// every status written is consistent with the Foo's generation.
func TestShutdownDuringBurst(t *testing.T) {
	const (
		numFoos = 1000
		workers = 8
		// createLatency is how long each Deployment create takes.
		createLatency = 20 * time.Millisecond
		// signalAt is the create during which SIGTERM is sent.
		signalAt = 200
	)
	tests := []struct {
		name string
		// hang makes every create in flight at the signal, or started
		// after it, wait for its context to be cancelled.
		hang            bool
		shutdownTimeout time.Duration
	}{
		{name: "in-flight reconciles finish within the grace period", shutdownTimeout: 10 * time.Second},
		{name: "hung reconciles are cancelled when the grace period ends", hang: true, shutdownTimeout: 500 * time.Millisecond},
	}
	self, err := os.FindProcess(os.Getpid())
	require.NoError(t, err)
	for _, tt := range tests {
		// Not parallel: the signal goes to the whole process.
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)

			kube := kubefake.NewClientset()
			foos := foofake.NewClientset()
			start := time.Now()
			for i := range numFoos {
				f := newFoo(fmt.Sprintf("foo-%04d", i), fmt.Sprintf("web-%04d", i), ptr.To(int32(i%5)))
				require.NoError(t, foos.Tracker().Add(f))
			}
			t.Logf("%d Foos stored in %s", numFoos, time.Since(start).Round(time.Microsecond))

			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(1)))
			ctx, stop := signal.NotifyContext(klog.NewContext(context.Background(), logger), syscall.SIGTERM)
			defer stop()

			var started, inFlight, inFlightAtSignal, createsCancelled atomic.Int32
			// startedFor records the Deployments whose create started; a Foo
			// may be reconciled again before the informer has seen its new
			// Deployment, so one name can start more than one create.
			var startedFor sync.Map
			var signalTime time.Time
			signalled := make(chan struct{})
			var hang <-chan struct{}
			if tt.hang {
				hang = signalled
			}
			hook := func(reqCtx context.Context, d *appsv1.Deployment) error {
				startedFor.Store(d.Name, true)
				inFlight.Add(1)
				defer inFlight.Add(-1)
				if started.Add(1) == signalAt {
					inFlightAtSignal.Store(inFlight.Load())
					signalTime = time.Now()
					close(signalled)
					assert.NoError(t, self.Signal(syscall.SIGTERM))
				}
				select {
				case <-time.After(createLatency):
					return nil
				case <-hang:
					<-reqCtx.Done()
					createsCancelled.Add(1)
					return reqCtx.Err()
				case <-reqCtx.Done():
					return reqCtx.Err()
				}
			}

			kubeInformers := kubeinformers.NewSharedInformerFactory(kube, 0)
			fooInformers := fooinformers.NewSharedInformerFactory(foos, 0)
			ctrl, err := foo.NewController(ctx, hookedKube{Interface: kube, beforeCreate: hook}, foos,
				kubeInformers.Apps().V1().Deployments(), fooInformers.Samplecontroller().V1alpha1().Foos(),
				eventstest.NewRecorder(), queue.WithWorkers(workers), queue.WithShutdownTimeout(tt.shutdownTimeout))
			require.NoError(t, err)
			kubeInformers.Start(ctx.Done())
			fooInformers.Start(ctx.Done())
			defer kubeInformers.Shutdown()
			defer fooInformers.Shutdown()

			done := make(chan error, 1)
			go func() { done <- ctrl.Run(ctx) }()
			// The burst up to the signal takes as long as the machine
			// makes it; only the stop after it is bounded.
			var runErr error
			select {
			case <-signalled:
			case runErr = <-done:
				t.Fatalf("Run returned before the signal: %v", runErr)
			case <-time.After(5 * time.Minute):
				t.Fatalf("the signal was not sent: %d creates started of the %d before it", started.Load(), signalAt)
			}
			select {
			case runErr = <-done:
			case <-time.After(eventually + 2*tt.shutdownTimeout):
				t.Fatal("Run did not return after the signal")
			}
			returned := time.Now()
			writesAtReturn := len(kube.Actions()) + len(foos.Actions())
			stop()
			kubeInformers.Shutdown()
			fooInformers.Shutdown()

			require.NoError(t, runErr)
			took := returned.Sub(signalTime)
			assert.GreaterOrEqual(t, inFlightAtSignal.Load(), int32(1), "reconciles were in flight at the signal")
			if tt.hang {
				assert.GreaterOrEqual(t, took, tt.shutdownTimeout, "Run waits out the grace period")
				assert.Less(t, took, 2*tt.shutdownTimeout, "then cancels the hung reconciles and returns")
			} else {
				assert.Less(t, took, tt.shutdownTimeout, "Run returns within the shutdown timeout")
			}
			assert.Equal(t, writesAtReturn, len(kube.Actions())+len(foos.Actions()), "nothing is written after Run returns")

			// No half-written object.
			depObjs, err := kube.Tracker().List(deploymentResource, appsv1.SchemeGroupVersion.WithKind("Deployment"), ns)
			require.NoError(t, err)
			deployments := map[string]*appsv1.Deployment{}
			for i := range depObjs.(*appsv1.DeploymentList).Items {
				d := &depObjs.(*appsv1.DeploymentList).Items[i]
				deployments[d.Name] = d
			}
			fooObjs, err := foos.Tracker().List(fooResource, samplev1alpha1.SchemeGroupVersion.WithKind("Foo"), ns)
			require.NoError(t, err)
			var written, cancelled, owned int
			cancelledMsg := func(name string) string { return fmt.Sprintf("Creating Deployment %q failed: context canceled", name) }
			for i := range fooObjs.(*samplev1alpha1.FooList).Items {
				f := &fooObjs.(*samplev1alpha1.FooList).Items[i]
				name := f.Spec.DeploymentName
				d, hasDeployment := deployments[name]
				hasStatus := f.Status.ObservedGeneration != 0 || len(f.Status.Conditions) > 0
				if hasDeployment {
					owned++
					assert.Empty(t, deploymentProblems(d, f), "Deployment %s is complete", name)
					assert.True(t, hasStatus, "Foo %s, whose Deployment exists, has its status written", f.Name)
				}
				if !hasStatus {
					continue
				}
				written++
				assert.Equal(t, f.Generation, f.Status.ObservedGeneration, "Foo %s", f.Name)
				cond := meta.FindStatusCondition(f.Status.Conditions, samplev1alpha1.ConditionReady)
				if !assert.NotNil(t, cond, "Foo %s has a Ready condition", f.Name) {
					continue
				}
				assert.Equal(t, f.Generation, cond.ObservedGeneration, "Foo %s", f.Name)
				// A new Deployment has no pods yet: Ready only if it wants none.
				want := ptr.Deref(f.Spec.Replicas, 1)
				wantReason, wantMsg := samplev1alpha1.ReasonDeploymentNotReady, readyMsg(name, 0, want)
				if want == 0 {
					wantReason = samplev1alpha1.ReasonDeploymentReady
				}
				if tt.hang && cond.Message == cancelledMsg(name) {
					// The last attempt was cancelled at the end of the grace
					// period, and says so.
					wantReason, wantMsg = samplev1alpha1.ReasonDeploymentNotReady, cancelledMsg(name)
					if !hasDeployment {
						cancelled++
					}
				} else {
					assert.True(t, hasDeployment, "Foo %s reports a Deployment that does not exist: %s", f.Name, cond.Message)
				}
				assert.Equal(t, wantReason, cond.Reason, "Foo %s", f.Name)
				assert.Equal(t, wantMsg, cond.Message, "Foo %s", f.Name)
			}
			var names int
			startedFor.Range(func(any, any) bool { names++; return true })
			assert.Len(t, deployments, owned, "every Deployment belongs to a Foo")
			assert.Less(t, len(deployments), numFoos, "the burst was interrupted")
			if tt.hang {
				// The create in flight may be a second one for a Deployment
				// that exists (see startedFor): its Foo has nothing to report.
				assert.Positive(t, createsCancelled.Load(), "the hung creates were cancelled")
				assert.Equal(t, names, len(deployments)+cancelled, "every Deployment whose create started exists, or its Foo reports the cancellation")
			} else {
				assert.Zero(t, cancelled)
				assert.Equal(t, names, len(deployments), "every Deployment whose create started exists")
			}
			t.Logf("SIGTERM during create %d with %d in flight; Run returned %s later (shutdown timeout %s); "+
				"%d creates started for %d names, %d Deployments, %d statuses written, %d creates cancelled",
				signalAt, inFlightAtSignal.Load(), took.Round(time.Millisecond), tt.shutdownTimeout,
				started.Load(), names, len(deployments), written, cancelled)
		})
	}
}
