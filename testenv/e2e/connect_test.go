package e2e

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/webhook"
	"github.com/ctrlkit/ctrlkit/webhook/webhooktest"
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

// TestConnectReachesAValidatorMadeWithConnect: WithConnect promises that
// a validating handler of pods "can refuse connections (pods/exec, for
// instance)", and without it that "the handler admits them". A real API
// server sends a pods/exec CONNECT with kind PodExecOptions (the exec
// subresource's storage kind), not Pod: the handler refuses it for its
// kind before either applies, so the validator never sees an exec, and a
// handler without WithConnect refuses every exec instead of admitting it.
// The package's tests only send kind Pod, which no API server sends.
func TestConnectReachesAValidatorMadeWithConnect(t *testing.T) {
	kinds := make(chan string, 100)
	withConnect, err := webhook.Validating(func(_ context.Context, req webhook.Request[*corev1.Pod]) ([]string, field.ErrorList) {
		select {
		case kinds <- req.Admission.Kind.Kind:
		default:
		}
		if req.Operation == admissionv1.Connect {
			return nil, field.ErrorList{field.Forbidden(field.NewPath("command"), "no exec in this test")}
		}
		return nil, nil
	}, webhook.WithConnect())
	require.NoError(t, err)
	last := execThrough(t, withConnect)
	close(kinds)
	var seen []string
	for k := range kinds {
		seen = append(seen, k)
	}
	assert.Contains(t, last.Error(), "no exec in this test", "the validator made WithConnect decides the exec (it saw kinds %v)", seen)
}

// TestConnectValidatorOfExecOptionsStillRefusesExec: on main, the way to
// refuse pods/exec was a validator of *corev1.PodExecOptions (the kind the
// API server sends), which main's documentation says is called for a
// CONNECT. After the change the same code admits every exec against a real
// API server, silently.
func TestConnectValidatorOfExecOptionsStillRefusesExec(t *testing.T) {
	called := false
	h, err := webhook.Validating(func(_ context.Context, req webhook.Request[*corev1.PodExecOptions]) ([]string, field.ErrorList) {
		called = true
		if req.Operation == admissionv1.Connect {
			return nil, field.ErrorList{field.Forbidden(field.NewPath("command"), "no exec in this test")}
		}
		return nil, nil
	})
	require.NoError(t, err)
	last := execThrough(t, h)
	assert.Contains(t, last.Error(), "no exec in this test", "the exec is refused by the validator (called: %v)", called)
}

// execThrough serves h for CONNECT of pods/exec and returns the error of
// an exec request through a real API server once the webhook answers (the
// pod does not exist: an admitted exec fails with NotFound).
func execThrough(t *testing.T, h http.Handler) error {
	t.Helper()
	env := newWebhookEnv(t)
	ca, certDir := webhooktest.NewCA(t), t.TempDir()
	certs, err := webhook.NewCertFiles(ca.Issue(t, certDir, 1, time.Now().Add(time.Hour)))
	require.NoError(t, err)
	var calls atomic.Int64
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1); h.ServeHTTP(w, r) })
	addr := freeAddress(t)
	srv, err := webhook.NewServer(addr, certs, webhook.Handle("/validate-exec", counted))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithWebhooks(srv), operator.WithControllers(idleController{}))
	}()
	t.Cleanup(func() { cancel(); <-done })

	_, err = env.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "exec"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "exec.pods.review.example.com", SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Connect},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/exec"}},
			}},
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + addr + "/validate-exec"), CABundle: ca.PEM},
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](5),
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	var last error
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), pollEvery, waitTimeout, true, func(ctx context.Context) (bool, error) {
		before := calls.Load()
		last = env.kube.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("p").SubResource("exec").
			Param("command", "sh").Param("stdout", "true").Do(ctx).Error()
		return last != nil && calls.Load() > before, nil
	}), "the webhook answers: last %v", last)
	t.Logf("the exec request, once the webhook answers: %v", last)
	return last
}
