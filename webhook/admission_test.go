package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/webhook"
	"github.com/ctrlkit/ctrlkit/webhook/webhooktest"
)

func deployment(replicas *int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       appsv1.DeploymentSpec{Replicas: replicas},
	}
}

// validateReplicas refuses more than 10 replicas and warns above 5.
func validateReplicas(_ context.Context, req webhook.Request[*appsv1.Deployment]) ([]string, field.ErrorList) {
	d := req.Object
	if req.Operation == admissionv1.Delete {
		d = req.OldObject
	}
	if d.Spec.Replicas == nil {
		return nil, nil
	}
	n := *d.Spec.Replicas
	var warnings []string
	if n > 5 {
		warnings = append(warnings, "spec.replicas: more than 5 replicas")
	}
	if n > 10 {
		return warnings, field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), n, "must be at most 10")}
	}
	return warnings, nil
}

func TestValidating(t *testing.T) {
	h, err := webhook.Validating(validateReplicas)
	require.NoError(t, err)
	tests := []struct {
		name         string
		req          *admissionv1.AdmissionRequest
		wantAllowed  bool
		wantWarnings []string
		wantCode     int32
		wantMessage  string
	}{
		{name: "admitted", req: webhooktest.Request(admissionv1.Create, deployment(ptr.To[int32](1)), nil), wantAllowed: true},
		{name: "admitted with a warning", req: webhooktest.Request(admissionv1.Create, deployment(ptr.To[int32](6)), nil),
			wantAllowed: true, wantWarnings: []string{"spec.replicas: more than 5 replicas"}},
		{name: "refused with its field errors and warnings", req: webhooktest.Request(admissionv1.Update, deployment(ptr.To[int32](11)), deployment(ptr.To[int32](1))),
			wantWarnings: []string{"spec.replicas: more than 5 replicas"}, wantCode: http.StatusUnprocessableEntity,
			wantMessage: `Deployment.apps "web" is invalid: spec.replicas: Invalid value: 11: must be at most 10`},
		{name: "a delete sees the old object", req: webhooktest.Request(admissionv1.Delete, nil, deployment(ptr.To[int32](11))),
			wantWarnings: []string{"spec.replicas: more than 5 replicas"}, wantCode: http.StatusUnprocessableEntity},
		{name: "another kind", req: webhooktest.Request(admissionv1.Create, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}, nil),
			wantCode: http.StatusBadRequest, wantMessage: "this webhook admits Deployment objects, not ConfigMap"},
		{name: "an object that does not decode", req: func() *admissionv1.AdmissionRequest {
			r := webhooktest.Request(admissionv1.Create, deployment(nil), nil)
			r.Object.Raw = []byte(`{"spec":{"replicas":"three"}}`)
			return r
		}(), wantCode: http.StatusBadRequest, wantMessage: "the object does not decode"},
		{name: "an unknown operation", req: webhooktest.Request("PATCH", deployment(nil), nil),
			wantCode: http.StatusBadRequest, wantMessage: `unknown operation "PATCH"`},
		{name: "an update without its old object", req: webhooktest.Request(admissionv1.Update, deployment(nil), nil),
			wantCode: http.StatusBadRequest, wantMessage: "the UPDATE request has no old object"},
		{name: "a create without its object", req: func() *admissionv1.AdmissionRequest {
			r := webhooktest.Request(admissionv1.Create, nil, nil)
			r.Kind.Kind = "Deployment"
			return r
		}(),
			wantCode: http.StatusBadRequest, wantMessage: "the CREATE request has no object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := webhooktest.Admit(t, h, tt.req)
			assert.Equal(t, tt.wantAllowed, resp.Allowed)
			assert.Equal(t, tt.wantWarnings, resp.Warnings)
			if tt.wantAllowed {
				assert.Nil(t, resp.Result)
				return
			}
			require.NotNil(t, resp.Result)
			assert.Equal(t, tt.wantCode, resp.Result.Code)
			assert.Contains(t, resp.Result.Message, tt.wantMessage)
		})
	}
}

func TestValidatingFieldErrorsAsTheAPIServerGivesThem(t *testing.T) {
	h, err := webhook.Validating(validateReplicas)
	require.NoError(t, err)
	resp := webhooktest.Admit(t, h, webhooktest.Request(admissionv1.Create, deployment(ptr.To[int32](11)), nil))
	require.NotNil(t, resp.Result)
	want := apierrors.NewInvalid(appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind(), "web",
		field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), int32(11), "must be at most 10")}).Status()
	assert.Equal(t, want, *resp.Result)
}

func TestValidatingRequestDetails(t *testing.T) {
	var got webhook.Request[*appsv1.Deployment]
	h, err := webhook.Validating(func(_ context.Context, req webhook.Request[*appsv1.Deployment]) ([]string, field.ErrorList) {
		got = req
		return nil, nil
	})
	require.NoError(t, err)
	req := webhooktest.Request(admissionv1.Update, deployment(ptr.To[int32](2)), deployment(ptr.To[int32](1)))
	req.SubResource, req.DryRun = "status", ptr.To(true)
	require.True(t, webhooktest.Admit(t, h, req).Allowed)
	assert.Equal(t, admissionv1.Update, got.Operation)
	assert.Equal(t, "status", got.SubResource)
	assert.True(t, got.DryRun)
	assert.Equal(t, int32(2), *got.Object.Spec.Replicas)
	assert.Equal(t, int32(1), *got.OldObject.Spec.Replicas)
	assert.Equal(t, req.UID, got.Admission.UID)
}

func TestValidatingInternalErrorsAndPanics(t *testing.T) {
	tests := []struct {
		name     string
		validate webhook.ValidateFunc[*appsv1.Deployment]
		want     string
	}{
		{name: "internal field error", validate: func(context.Context, webhook.Request[*appsv1.Deployment]) ([]string, field.ErrorList) {
			return nil, field.ErrorList{field.InternalError(field.NewPath("spec"), errors.New("lookup failed"))}
		}, want: "lookup failed"},
		{name: "panic", validate: func(context.Context, webhook.Request[*appsv1.Deployment]) ([]string, field.ErrorList) {
			panic("boom")
		}, want: "the webhook panicked: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := webhook.Validating(tt.validate)
			require.NoError(t, err)
			resp := webhooktest.Admit(t, h, webhooktest.Request(admissionv1.Create, deployment(nil), nil))
			assert.False(t, resp.Allowed)
			require.NotNil(t, resp.Result)
			assert.Equal(t, int32(http.StatusInternalServerError), resp.Result.Code)
			assert.Contains(t, resp.Result.Message, tt.want)
		})
	}
}

// defaultDeployment sets one replica and an app label.
func defaultDeployment(_ context.Context, req webhook.Request[*appsv1.Deployment]) error {
	d := req.Object
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.To[int32](1)
	}
	if d.Spec.Template.Labels == nil {
		d.Spec.Template.Labels = map[string]string{"app": d.Name}
	}
	return nil
}

func TestMutating(t *testing.T) {
	h, err := webhook.Mutating(defaultDeployment)
	require.NoError(t, err)

	t.Run("create is defaulted", func(t *testing.T) {
		req := webhooktest.Request(admissionv1.Create, deployment(nil), nil)
		resp := webhooktest.Admit(t, h, req)
		require.True(t, resp.Allowed)
		got := webhooktest.Patched(t, req, resp, &appsv1.Deployment{})
		assert.Equal(t, int32(1), *got.Spec.Replicas)
		assert.Equal(t, map[string]string{"app": "web"}, got.Spec.Template.Labels)
	})
	t.Run("fields the Go type does not know survive", func(t *testing.T) {
		req := webhooktest.Request(admissionv1.Create, deployment(nil), nil)
		req.Object.Raw = []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"futureField":{"a":1}}}`)
		resp := webhooktest.Admit(t, h, req)
		require.True(t, resp.Allowed)
		var got map[string]any
		webhooktest.Patched(t, req, resp, &got)
		assert.Equal(t, map[string]any{"a": float64(1)}, got["spec"].(map[string]any)["futureField"])
		assert.Equal(t, float64(1), got["spec"].(map[string]any)["replicas"])
	})
	t.Run("nothing to default: no patch", func(t *testing.T) {
		d := deployment(ptr.To[int32](3))
		d.Spec.Template.Labels = map[string]string{"app": "other"}
		resp := webhooktest.Admit(t, h, webhooktest.Request(admissionv1.Update, d, deployment(nil)))
		assert.True(t, resp.Allowed)
		assert.Empty(t, resp.Patch)
		assert.Nil(t, resp.PatchType)
	})
	t.Run("delete is admitted unchanged", func(t *testing.T) {
		resp := webhooktest.Admit(t, h, webhooktest.Request(admissionv1.Delete, nil, deployment(nil)))
		assert.True(t, resp.Allowed)
		assert.Empty(t, resp.Patch)
	})
}

func TestMutatingErrors(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode int32
	}{
		{name: "a status error keeps its status", err: apierrors.NewForbidden(appsv1.Resource("deployments"), "web", errors.New("no")), wantCode: http.StatusForbidden},
		{name: "any other error is internal", err: errors.New("lookup failed"), wantCode: http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := webhook.Mutating(func(context.Context, webhook.Request[*appsv1.Deployment]) error { return tt.err })
			require.NoError(t, err)
			resp := webhooktest.Admit(t, h, webhooktest.Request(admissionv1.Create, deployment(nil), nil))
			assert.False(t, resp.Allowed)
			require.NotNil(t, resp.Result)
			assert.Equal(t, tt.wantCode, resp.Result.Code)
		})
	}
}

func TestHandlersRefuseBadRequests(t *testing.T) {
	h, err := webhook.Validating(validateReplicas)
	require.NoError(t, err)
	valid, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  webhooktest.Request(admissionv1.Create, deployment(nil), nil),
	})
	require.NoError(t, err)
	tests := []struct {
		name        string
		method      string
		contentType string
		body        []byte
		wantCode    int
	}{
		{name: "valid", method: http.MethodPost, contentType: "application/json", body: valid, wantCode: http.StatusOK},
		{name: "GET", method: http.MethodGet, contentType: "application/json", body: valid, wantCode: http.StatusMethodNotAllowed},
		{name: "not JSON", method: http.MethodPost, contentType: "text/plain", body: valid, wantCode: http.StatusUnsupportedMediaType},
		{name: "garbage", method: http.MethodPost, contentType: "application/json", body: []byte("{not json"), wantCode: http.StatusBadRequest},
		{name: "no request", method: http.MethodPost, contentType: "application/json",
			body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), wantCode: http.StatusBadRequest},
		{name: "another kind of review", method: http.MethodPost, contentType: "application/json",
			body: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"x"}}`), wantCode: http.StatusBadRequest},
		{name: "too large", method: http.MethodPost, contentType: "application/json",
			body: append([]byte(`{"apiVersion":"`), bytes.Repeat([]byte("x"), webhook.MaxRequestBytes)...), wantCode: http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "/validate", bytes.NewReader(tt.body))
			r.Header.Set("Content-Type", tt.contentType)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, tt.wantCode, w.Code, w.Body.String())
		})
	}
}

func TestAdmissionReviewV1beta1IsAnsweredInKind(t *testing.T) {
	h, err := webhook.Validating(validateReplicas)
	require.NoError(t, err)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1beta1", Kind: "AdmissionReview"},
		Request:  webhooktest.Request(admissionv1.Create, deployment(nil), nil),
	})
	require.NoError(t, err)
	w := postJSON(h, body)
	require.Equal(t, http.StatusOK, w.Code)
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
	assert.Equal(t, "admission.k8s.io/v1beta1", out.APIVersion)
	require.NotNil(t, out.Response)
	assert.True(t, out.Response.Allowed)
}

func TestHandlersNeedAFunctionAndAnAPIType(t *testing.T) {
	_, err := webhook.Validating[*appsv1.Deployment](nil)
	assert.Error(t, err)
	_, err = webhook.Mutating[*appsv1.Deployment](nil)
	assert.Error(t, err)
	_, err = webhook.Validating(func(context.Context, webhook.Request[*runtime.Unknown]) ([]string, field.ErrorList) { return nil, nil },
		webhook.WithKind("Unknown"))
	assert.NoError(t, err, "any pointer to a struct")
	_, err = webhook.Mutating(defaultDeployment, webhook.WithConnect())
	assert.ErrorContains(t, err, "WithConnect applies to Validating", "a defaulter is never called for a CONNECT")
	_, err = webhook.Conversion(widgetVersions(), webhook.WithKind("Widget"), webhook.WithConnect())
	assert.ErrorContains(t, err, "WithConnect applies to Validating")
}

func TestMalformedReviewsAreRefusedNeverPanic(t *testing.T) {
	validating, err := webhook.Validating(validateReplicas)
	require.NoError(t, err)
	mutating, err := webhook.Mutating(defaultDeployment)
	require.NoError(t, err)
	valid, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  webhooktest.Request(admissionv1.Update, deployment(ptr.To[int32](3)), deployment(nil)),
	})
	require.NoError(t, err)
	const seed = 20261126
	rng := rand.New(rand.NewPCG(seed, 0))
	for i, body := range malformed(valid, 3000, func(n int) int {
		if n <= 0 {
			return 0
		}
		return rng.IntN(n)
	}) {
		for name, h := range map[string]http.Handler{"validating": validating, "mutating": mutating} {
			var w *httptest.ResponseRecorder
			require.NotPanics(t, func() { w = postJSON(h, body) }, "seed %d, body %d to %s: %s", seed, i, name, body)
			if w.Code != http.StatusOK {
				require.Equal(t, http.StatusBadRequest, w.Code, "seed %d, body %d to %s: %s", seed, i, name, body)
				continue
			}
			var out admissionv1.AdmissionReview
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out), "seed %d, body %d to %s", seed, i, name)
			require.NotNil(t, out.Response, "seed %d, body %d to %s", seed, i, name)
			if !out.Response.Allowed {
				require.NotNil(t, out.Response.Result, "a refusal says why")
				require.NotEmpty(t, out.Response.Result.Message)
				require.NotEqual(t, int32(http.StatusInternalServerError), out.Response.Result.Code,
					"seed %d, body %d to %s: a malformed request is the client's fault: %s", seed, i, name, out.Response.Result.Message)
			}
		}
	}
}

// postJSON sends body to h as the API server sends a review: a POST of
// JSON.
func postJSON(h http.Handler, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// malformed returns n variants of a valid body, each broken in one way.
func malformed(valid []byte, n int, next func(int) int) [][]byte {
	out := make([][]byte, 0, n)
	for range n {
		b := bytes.Clone(valid)
		switch next(4) {
		case 0: // truncated
			b = b[:next(len(b))]
		case 1: // one byte changed
			b[next(len(b))] = byte(next(256))
		case 2: // a span removed
			i := next(len(b))
			j := i + next(len(b)-i)
			b = append(b[:i], b[j:]...)
		case 3: // a value's type changed
			b = []byte(strings.Replace(string(b), `"`, `[`, 1+next(8)))
		}
		out = append(out, b)
	}
	return out
}

// TestMutatingKeepsIntegersExact is a regression test: the patch carried
// integers through float64, so those above 2^53 reached the API server
// rounded, and a change by less than float64's step was not patched.
func TestMutatingKeepsIntegersExact(t *testing.T) {
	const big = int64(1)<<53 + 1 // the first integer float64 rounds
	pod := func(runAsUser *int64, deadline *int64) *corev1.Pod {
		p := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
			Spec: corev1.PodSpec{
				ActiveDeadlineSeconds: deadline,
				Containers:            []corev1.Container{{Name: "app", Image: "app"}},
			},
		}
		if runAsUser != nil {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: runAsUser}
		}
		return p
	}
	tests := []struct {
		name     string
		obj      *corev1.Pod
		defaults func(*corev1.Pod)
		// wantUser is the first container's runAsUser once patched,
		// wantDeadline the pod's activeDeadlineSeconds, 0 for none.
		wantUser, wantDeadline int64
		wantContainers         int
	}{
		{
			name:         "a large integer set",
			obj:          pod(nil, nil),
			defaults:     func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To(big) },
			wantDeadline: big, wantContainers: 1,
		},
		{
			name: "a large integer in a list the defaulter lengthens",
			obj:  pod(ptr.To(big), nil),
			defaults: func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Image: "sidecar"})
			},
			wantUser: big, wantContainers: 2,
		},
		{
			name:         "a large integer changed by one",
			obj:          pod(nil, ptr.To(big-1)),
			defaults:     func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To(big) },
			wantDeadline: big, wantContainers: 1,
		},
		{
			name:         "a negative large integer set",
			obj:          pod(nil, nil),
			defaults:     func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To(-big) },
			wantDeadline: -big, wantContainers: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := webhook.Mutating(func(_ context.Context, req webhook.Request[*corev1.Pod]) error {
				tt.defaults(req.Object)
				return nil
			})
			require.NoError(t, err)
			req := webhooktest.Request(admissionv1.Create, tt.obj, nil)
			resp := webhooktest.Admit(t, h, req)
			require.True(t, resp.Allowed)
			got := webhooktest.Patched(t, req, resp, &corev1.Pod{})
			require.Len(t, got.Spec.Containers, tt.wantContainers)
			assert.Equal(t, tt.wantDeadline, ptr.Deref(got.Spec.ActiveDeadlineSeconds, 0), "patch %s", resp.Patch)
			var user int64
			if sc := got.Spec.Containers[0].SecurityContext; sc != nil {
				user = ptr.Deref(sc.RunAsUser, 0)
			}
			assert.Equal(t, tt.wantUser, user, "patch %s", resp.Patch)
		})
	}
}

// TestConnectIsNotDecodedAsTheObject is a regression test: the object of a
// CONNECT request, the options of the connection (a PodExecOptions for
// pods/exec), was decoded into the handler's type as if it were the
// object, and refused when it did not decode.
func TestConnectIsNotDecodedAsTheObject(t *testing.T) {
	exec := func(object string) *admissionv1.AdmissionRequest {
		req := webhooktest.Request(admissionv1.Connect, nil, nil)
		req.Kind = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
		req.Resource = metav1.GroupVersionResource{Version: "v1", Resource: "pods"}
		req.SubResource, req.Name, req.Namespace = "exec", "p", "default"
		req.Object.Raw = []byte(object)
		return req
	}
	const options = `{"kind":"PodExecOptions","apiVersion":"v1","stdin":true,"container":"app","command":["sh"]}`

	t.Run("a validator made WithConnect sees no object and the options as sent", func(t *testing.T) {
		var seen []webhook.Request[*corev1.Pod]
		h, err := webhook.Validating(func(_ context.Context, req webhook.Request[*corev1.Pod]) ([]string, field.ErrorList) {
			seen = append(seen, req)
			if req.Operation == admissionv1.Connect && req.SubResource == "exec" {
				return nil, field.ErrorList{field.Forbidden(field.NewPath("command"), "no exec")}
			}
			return nil, nil
		}, webhook.WithConnect())
		require.NoError(t, err)
		resp := webhooktest.Admit(t, h, exec(options))
		assert.False(t, resp.Allowed)
		require.NotNil(t, resp.Result)
		assert.Equal(t, int32(http.StatusUnprocessableEntity), resp.Result.Code)
		require.Len(t, seen, 1)
		assert.Nil(t, seen[0].Object, "the options are not the object")
		assert.Nil(t, seen[0].OldObject)
		assert.JSONEq(t, options, string(seen[0].Admission.Object.Raw))
	})

	t.Run("a defaulter is not called and the request is admitted unchanged", func(t *testing.T) {
		tests := []struct {
			name   string
			object string
		}{
			{name: "options of another shape than the object", object: options},
			{name: "options that do not decode into the object's type", object: `{"kind":"PodExecOptions","apiVersion":"v1","spec":"sh"}`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				called := false
				h, err := webhook.Mutating(func(context.Context, webhook.Request[*corev1.Pod]) error {
					called = true
					return nil
				})
				require.NoError(t, err)
				resp := webhooktest.Admit(t, h, exec(tt.object))
				assert.True(t, resp.Allowed, "%v", resp.Result)
				assert.Empty(t, resp.Patch)
				assert.False(t, called)
			})
		}
	})
}

// TestConnectReachesOnlyValidatorsMadeForIt is a regression test: a
// CONNECT request (pods/exec) carries no object, and a validator written
// for the objects it validates, as the package documentation's, read
// req.Object and panicked; and the API server sends it with the kind of
// the connection's options (PodExecOptions), not the object's, so a
// validator of the object's type never saw it. A validator of the
// object's type made WithConnect decides it; one not made WithConnect
// is not called and refuses it, naming WithConnect (never admits it); a
// validator of the options' type decides it with or without WithConnect;
// a CONNECT to another resource's subresource is refused for its kind.
func TestConnectReachesOnlyValidatorsMadeForIt(t *testing.T) {
	connect := func(kind, resource, subresource string) *admissionv1.AdmissionRequest {
		req := webhooktest.Request(admissionv1.Connect, nil, nil)
		req.Kind = metav1.GroupVersionKind{Version: "v1", Kind: kind}
		req.Resource = metav1.GroupVersionResource{Version: "v1", Resource: resource}
		req.SubResource, req.Name, req.Namespace = subresource, "p", "default"
		req.Object.Raw = []byte(`{"kind":"` + kind + `","apiVersion":"v1"}`)
		return req
	}
	exec := connect("PodExecOptions", "pods", "exec")

	// podValidator is written for pods; only one made WithConnect knows
	// of CONNECT, the other reads the object.
	podValidator := func(called *bool, connect bool) webhook.ValidateFunc[*corev1.Pod] {
		return func(_ context.Context, req webhook.Request[*corev1.Pod]) ([]string, field.ErrorList) {
			*called = true
			if connect && req.Operation == admissionv1.Connect {
				return nil, field.ErrorList{field.Forbidden(field.NewPath("command"), "no "+req.SubResource)}
			}
			if len(req.Object.Spec.Containers) == 0 {
				return nil, field.ErrorList{field.Required(field.NewPath("spec", "containers"), "")}
			}
			return nil, nil
		}
	}
	optionsValidator := func(called *bool) webhook.ValidateFunc[*corev1.PodExecOptions] {
		return func(_ context.Context, req webhook.Request[*corev1.PodExecOptions]) ([]string, field.ErrorList) {
			*called = true
			return nil, field.ErrorList{field.Forbidden(field.NewPath("command"), "no exec")}
		}
	}
	tests := []struct {
		name    string
		handler func(called *bool) (http.Handler, error)
		req     *admissionv1.AdmissionRequest
		called  bool
		code    int32
		message string
	}{
		{name: "a pod validator without WithConnect refuses the exec, naming WithConnect, not called",
			handler: func(called *bool) (http.Handler, error) { return webhook.Validating(podValidator(called, false)) },
			req:     exec, code: http.StatusForbidden, message: "WithConnect"},
		{name: "a pod validator made WithConnect decides the exec",
			handler: func(called *bool) (http.Handler, error) {
				return webhook.Validating(podValidator(called, true), webhook.WithConnect())
			},
			req: exec, called: true, code: http.StatusUnprocessableEntity, message: "no exec"},
		{name: "a pod validator made WithConnect decides a port forward",
			handler: func(called *bool) (http.Handler, error) {
				return webhook.Validating(podValidator(called, true), webhook.WithConnect())
			},
			req: connect("PodPortForwardOptions", "pods", "portforward"), called: true, code: http.StatusUnprocessableEntity, message: "no portforward"},
		{name: "a pod validator made WithConnect refuses the options of another resource's subresource for their kind",
			handler: func(called *bool) (http.Handler, error) {
				return webhook.Validating(podValidator(called, true), webhook.WithConnect())
			},
			req: connect("ServiceProxyOptions", "services", "proxy"), code: http.StatusBadRequest, message: "not ServiceProxyOptions"},
		{name: "a validator of the options decides the exec without WithConnect",
			handler: func(called *bool) (http.Handler, error) { return webhook.Validating(optionsValidator(called)) },
			req:     exec, called: true, code: http.StatusUnprocessableEntity, message: "no exec"},
		{name: "a validator of the options decides the exec made WithConnect",
			handler: func(called *bool) (http.Handler, error) {
				return webhook.Validating(optionsValidator(called), webhook.WithConnect())
			},
			req: exec, called: true, code: http.StatusUnprocessableEntity, message: "no exec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			h, err := tt.handler(&called)
			require.NoError(t, err)
			resp := webhooktest.Admit(t, h, tt.req)
			assert.False(t, resp.Allowed, "a CONNECT is never admitted unchecked")
			assert.Equal(t, tt.called, called)
			require.NotNil(t, resp.Result)
			assert.Equal(t, tt.code, resp.Result.Code, "%v", resp.Result)
			assert.Contains(t, resp.Result.Message, tt.message)
		})
	}
}
