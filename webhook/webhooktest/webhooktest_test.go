package webhooktest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/webhook"
	"github.com/ctrlkit/ctrlkit/webhook/webhooktest"
)

func defaultReplicas(_ context.Context, req webhook.Request[*appsv1.Deployment]) error {
	if req.Object.Spec.Replicas == nil {
		req.Object.Spec.Replicas = ptr.To[int32](1)
	}
	return nil
}

// TestDefaults is the package documentation's example.
func TestDefaults(t *testing.T) {
	h, err := webhook.Mutating(defaultReplicas)
	require.NoError(t, err)
	req := webhooktest.Request(admissionv1.Create, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, nil)
	resp := webhooktest.Admit(t, h, req)
	require.True(t, resp.Allowed)
	defaulted := webhooktest.Patched(t, req, resp, &appsv1.Deployment{})
	assert.Equal(t, int32(1), *defaulted.Spec.Replicas)
}

func TestRequest(t *testing.T) {
	d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	req := webhooktest.Request(admissionv1.Delete, nil, d)
	assert.Equal(t, metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, req.Kind)
	assert.Equal(t, "deployments", req.Resource.Resource)
	assert.Equal(t, "web", req.Name)
	assert.Equal(t, "ns", req.Namespace)
	assert.Empty(t, req.Object.Raw)
	assert.NotEmpty(t, req.OldObject.Raw)
	assert.Equal(t, admissionv1.Delete, req.Operation)
}

// recorder is a testing.TB that keeps failures instead of reporting them.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// failures runs fn with a recorder and returns what failed.
func failures(t *testing.T, fn func(tb testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r.failures
}

// thing and thingV2 are two versions of a Thing; thingV2 is the hub.
type thing struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Name              string `json:"name,omitempty"`
}

func (x *thing) DeepCopyObject() k8sruntime.Object {
	out := *x
	x.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

type thingV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Title             string `json:"title,omitempty"`
}

func (x *thingV2) DeepCopyObject() k8sruntime.Object {
	out := *x
	x.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func thingVersions(lossy bool) []webhook.Version[*thingV2] {
	return []webhook.Version[*thingV2]{
		webhook.Spoke("things.example.com/v1", func(src *thing, dst *thingV2) error {
			src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
			dst.Title = src.Name
			return nil
		}, func(src *thingV2, dst *thing) error {
			src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
			if !lossy {
				dst.Name = src.Title
			}
			return nil
		}),
		webhook.Hub[*thingV2]("things.example.com/v2"),
	}
}

func TestRoundTrip(t *testing.T) {
	for _, lossy := range []bool{false, true} {
		t.Run(fmt.Sprintf("lossy=%v", lossy), func(t *testing.T) {
			versions := thingVersions(lossy)
			h, err := webhook.Conversion(versions, webhook.WithKind("Thing"))
			require.NoError(t, err)
			got := failures(t, func(tb testing.TB) { webhooktest.RoundTrip(tb, h, "Thing", versions, 7, 20) })
			if !lossy {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "one report, then it stops")
			assert.Contains(t, got[0], "seed 7, object 0: things.example.com/v1 -> things.example.com/v2 -> things.example.com/v1 changed it")
		})
	}
}

// A round trip that changes an object says first which fields changed,
// a line each with the field's path and the values sent and got back,
// not the whole fuzzed objects.
func TestRoundTripFailureNamesTheChangedFieldsFirst(t *testing.T) {
	versions := thingVersions(true)
	h, err := webhook.Conversion(versions, webhook.WithKind("Thing"))
	require.NoError(t, err)
	got := failures(t, func(tb testing.TB) { webhooktest.RoundTrip(tb, h, "Thing", versions, 7, 20) })
	require.Len(t, got, 1)
	lines := strings.Split(got[0], "\n")
	require.Len(t, lines, 2, "the header and the one changed field: %s", got[0])
	assert.Equal(t, "webhooktest: seed 7, object 0: things.example.com/v1 -> things.example.com/v2 -> things.example.com/v1 changed it:", lines[0])
	assert.Regexp(t, `^  name: sent ".+", got \(absent\)$`, lines[1])
}

func TestHarnessFailures(t *testing.T) {
	h, err := webhook.Conversion(thingVersions(false), webhook.WithKind("Thing"))
	require.NoError(t, err)
	wrongUID := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"other","allowed":true}}`))
	})
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	tests := []struct {
		name string
		fn   func(tb testing.TB)
		want string
	}{
		{name: "convert to a version the webhook lacks", fn: func(tb testing.TB) {
			webhooktest.Convert(tb, h, "things.example.com/v3", &thing{TypeMeta: metav1.TypeMeta{APIVersion: "things.example.com/v1", Kind: "Thing"}})
		}, want: "converting to things.example.com/v3 failed"},
		{name: "an answer of another UID", fn: func(tb testing.TB) {
			webhooktest.Admit(tb, wrongUID, webhooktest.Request(admissionv1.Create, deployment, nil))
		}, want: `the response has UID "other"`},
		{name: "not a webhook", fn: func(tb testing.TB) {
			webhooktest.Admit(tb, http.NotFoundHandler(), webhooktest.Request(admissionv1.Create, deployment, nil))
		}, want: "HTTP 404"},
		{name: "an answer without a response", fn: func(tb testing.TB) {
			webhooktest.Admit(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`))
			}), webhooktest.Request(admissionv1.Create, deployment, nil))
		}, want: "has no response"},
		{name: "an answer that is not JSON", fn: func(tb testing.TB) {
			webhooktest.Convert(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`<html>`)) }),
				"things.example.com/v2", []byte(`{}`))
		}, want: "the answer is not a review"},
		{name: "a conversion answer without a response", fn: func(tb testing.TB) {
			webhooktest.Convert(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`))
			}), "things.example.com/v2", []byte(`{}`))
		}, want: "has no response"},
		{name: "a patch of another type", fn: func(tb testing.TB) {
			webhooktest.Patched(tb, webhooktest.Request(admissionv1.Create, deployment, nil),
				&admissionv1.AdmissionResponse{Patch: []byte(`[]`)}, &appsv1.Deployment{})
		}, want: "not JSONPatch"},
		{name: "a patch that does not decode", fn: func(tb testing.TB) {
			pt := admissionv1.PatchTypeJSONPatch
			webhooktest.Patched(tb, webhooktest.Request(admissionv1.Create, deployment, nil),
				&admissionv1.AdmissionResponse{Patch: []byte(`{`), PatchType: &pt}, &appsv1.Deployment{})
		}, want: "the patch does not decode"},
		{name: "a patch that does not apply", fn: func(tb testing.TB) {
			pt := admissionv1.PatchTypeJSONPatch
			webhooktest.Patched(tb, webhooktest.Request(admissionv1.Create, deployment, nil),
				&admissionv1.AdmissionResponse{Patch: []byte(`[{"op":"replace","path":"/spec/missing/x","value":1}]`), PatchType: &pt}, &appsv1.Deployment{})
		}, want: "the patch does not apply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := failures(t, tt.fn)
			require.Len(t, got, 1)
			assert.Contains(t, got[0], tt.want)
		})
	}
}

func TestCAIssuesServingCertificates(t *testing.T) {
	ca := webhooktest.NewCA(t)
	certFile, keyFile := ca.Issue(t, t.TempDir(), 5, time.Now().Add(time.Hour))
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, int64(5), leaf.SerialNumber.Int64())
	_, err = leaf.Verify(x509.VerifyOptions{Roots: ca.Pool, DNSName: "127.0.0.1"})
	assert.NoError(t, err)
	block, _ := pem.Decode(ca.PEM)
	require.NotNil(t, block, "a PEM caBundle")
}
