package webhook_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ctrlkit/ctrlkit/webhook"
	"github.com/ctrlkit/ctrlkit/webhook/webhooktest"
)

// TestConnectValidatorIsNotSilentlyBypassed: a validator written to the
// contract main documents ("a validator gets it with a nil Object and the
// options undecoded in Request.Admission") to refuse pods/exec, served
// for a webhook configuration that asks for CONNECT on pods/exec. The API
// server sends that CONNECT with kind PodExecOptions (the subresource's
// storage kind), so the handler that gets past the kind check is one of
// *corev1.PodExecOptions, the request as the API server sends it. After the change,
// the same code, unchanged, admits every exec without being called: a
// security check turned off by an upgrade, without an error, a log line
// or a note in docs/webhooks.md. A CONNECT only reaches the handler when
// its configuration lists CONNECT, so a handler not made WithConnect
// should at least not admit it (refuse it, saying why, or call validate).
func TestConnectValidatorIsNotSilentlyBypassed(t *testing.T) {
	exec := webhooktest.Request(admissionv1.Connect, nil, nil)
	exec.Kind = metav1.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}
	exec.Resource = metav1.GroupVersionResource{Version: "v1", Resource: "pods"}
	exec.SubResource, exec.Name, exec.Namespace = "exec", "p", "default"
	exec.Object.Raw = []byte(`{"kind":"PodExecOptions","apiVersion":"v1","command":["sh"]}`)

	called := false
	h, err := webhook.Validating(func(_ context.Context, req webhook.Request[*corev1.PodExecOptions]) ([]string, field.ErrorList) {
		called = true
		if req.Operation == admissionv1.Connect && req.SubResource == "exec" {
			return nil, field.ErrorList{field.Forbidden(field.NewPath("command"), "no exec into pods of this namespace")}
		}
		return nil, nil
	})
	assert.NoError(t, err)
	resp := webhooktest.Admit(t, h, exec)
	assert.False(t, resp.Allowed && !called,
		"a validator that refuses pods/exec, built as main documented, now admits every exec without being called")
}
