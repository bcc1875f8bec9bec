// Package webhooktest calls the handlers of package webhook as the API
// server does, without a server: it builds admission requests, sends them
// as AdmissionReviews, applies the patches that come back, and round-trips
// fuzzed objects through a conversion webhook.
//
//	func TestDefaults(t *testing.T) {
//		h, err := webhook.Mutating(defaultReplicas)
//		require.NoError(t, err)
//		req := webhooktest.Request(admissionv1.Create, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, nil)
//		resp := webhooktest.Admit(t, h, req)
//		require.True(t, resp.Allowed)
//		defaulted := webhooktest.Patched(t, req, resp, &appsv1.Deployment{})
//		assert.Equal(t, int32(1), *defaulted.Spec.Replicas)
//	}
package webhooktest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/dump"
	"sigs.k8s.io/randfill"

	"github.com/ctrlkit/ctrlkit/webhook"
)

// Request returns an admission request of operation op for obj, the new
// object, and old, the stored one (either may be nil), as the API server
// sends it: the kind, name and namespace come from the object, the kind
// from its apiVersion and kind when set, else from its Go type's name.
// Set DryRun, SubResource, UserInfo or Options on the result as needed.
func Request(op admissionv1.Operation, obj, old runtime.Object) *admissionv1.AdmissionRequest {
	req := &admissionv1.AdmissionRequest{UID: types.UID(fmt.Sprintf("webhooktest-%s", strings.ToLower(string(op)))), Operation: op}
	for _, o := range []runtime.Object{obj, old} {
		if o == nil || reflect.ValueOf(o).IsNil() {
			continue
		}
		gvk := o.GetObjectKind().GroupVersionKind()
		if gvk.Kind == "" {
			gvk.Kind = reflect.TypeOf(o).Elem().Name()
		}
		req.Kind = metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
		req.Resource = metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"}
		if m, err := meta.Accessor(o); err == nil {
			req.Name, req.Namespace = m.GetName(), m.GetNamespace()
		}
		break
	}
	req.Object = raw(obj)
	req.OldObject = raw(old)
	return req
}

func raw(obj runtime.Object) runtime.RawExtension {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return runtime.RawExtension{}
	}
	data, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("webhooktest: encoding %T: %v", obj, err))
	}
	return runtime.RawExtension{Raw: data}
}

// Admit sends req to h in an AdmissionReview of admission.k8s.io/v1 and
// returns the response, failing t unless h answers with an AdmissionReview
// whose response has req's UID.
func Admit(t testing.TB, h http.Handler, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request:  req,
	}
	var out admissionv1.AdmissionReview
	post(t, h, review, &out)
	if out.Response == nil {
		t.Fatalf("webhooktest: the AdmissionReview answered has no response")
	}
	if out.Response.UID != req.UID {
		t.Fatalf("webhooktest: the response has UID %q, the request %q", out.Response.UID, req.UID)
	}
	return out.Response
}

// Patched applies resp's JSON patch to req's object and decodes the result
// into into, which it returns; without a patch, into gets req's object.
func Patched[T any](t testing.TB, req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse, into T) T {
	t.Helper()
	doc := req.Object.Raw
	if len(resp.Patch) > 0 {
		if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
			t.Fatalf("webhooktest: a patch of type %v, not JSONPatch", resp.PatchType)
		}
		patch, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatalf("webhooktest: the patch does not decode: %v\n%s", err, resp.Patch)
		}
		if doc, err = patch.Apply(doc); err != nil {
			t.Fatalf("webhooktest: the patch does not apply: %v\n%s", err, resp.Patch)
		}
	}
	if err := json.Unmarshal(doc, into); err != nil {
		t.Fatalf("webhooktest: the patched object does not decode: %v", err)
	}
	return into
}

// RoundTrip checks that h, a webhook.Conversion handler of versions of
// kind, loses nothing: for each version it fills n objects with random
// values (seeded by seed, so that a failure replays) and converts each to
// every other version and back, failing t when one comes back different
// with the JSON paths of the fields that changed and their values sent
// and got back (the whole objects where their JSON is the same).
// The values are ones an API server could store: free-form fields hold
// valid JSON, compact as encoding/json writes it: any JSON value in an
// apiextensionsv1.JSON, a JSON object in a runtime.RawExtension (whose
// schema in a CRD is type: object).
func RoundTrip[H runtime.Object](t testing.TB, h http.Handler, kind string, versions []webhook.Version[H], seed int64, n int) {
	t.Helper()
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, freeFormFuncs), rand.NewSource(seed), serializer.NewCodecFactory(runtime.NewScheme()))
	for _, from := range versions {
		gv, err := schema.ParseGroupVersion(from.APIVersion())
		if err != nil {
			t.Fatalf("webhooktest: %v", err)
		}
		for i := range n {
			obj := from.New()
			f.Fill(obj)
			obj.GetObjectKind().SetGroupVersionKind(gv.WithKind(kind))
			for _, to := range versions {
				if to.APIVersion() == from.APIVersion() {
					continue
				}
				there := Convert(t, h, to.APIVersion(), obj)
				back := Convert(t, h, from.APIVersion(), there)
				got := from.New()
				if err := json.Unmarshal(back, got); err != nil {
					t.Fatalf("webhooktest: decoding %s: %v", from.APIVersion(), err)
				}
				if !apiequality.Semantic.DeepEqual(obj, got) {
					trip := fmt.Sprintf("webhooktest: seed %d, object %d: %s -> %s -> %s", seed, i, from.APIVersion(), to.APIVersion(), from.APIVersion())
					if diff := fieldDiff(obj, got); diff != "" {
						t.Errorf("%s changed it:\n%s", trip, diff)
					} else {
						t.Errorf("%s changed it:\nsent %s\ngot  %s", trip, dump.Pretty(obj), dump.Pretty(got))
					}
					return
				}
			}
		}
	}
}

// fieldDiff lists the fields whose JSON differs between sent and got, a
// line each with the field's path and its two values, or returns "" where
// their JSON is the same (a difference that only the Go values show).
func fieldDiff(sent, got any) string {
	a, errA := decodedJSON(sent)
	b, errB := decodedJSON(got)
	if errA != nil || errB != nil {
		return ""
	}
	var lines []string
	diffJSON("", a, b, &lines)
	return strings.Join(lines, "\n")
}

// absent is the value of a field that one of the objects fieldDiff
// compares lacks.
type absent struct{}

// decodedJSON returns v's JSON decoded into maps, slices and scalars.
func decodedJSON(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(data, &out)
	return out, err
}

// fieldName is a JSON field name as a path of fieldDiff's shows it.
var fieldName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// diffJSON appends to lines a line for each value under path that differs
// between a and b, decoded JSON, going into the objects and lists both
// have.
func diffJSON(path string, a, b any, lines *[]string) {
	switch a := a.(type) {
	case map[string]any:
		if b, ok := b.(map[string]any); ok {
			union := maps.Clone(a)
			maps.Copy(union, b)
			keys := slices.Sorted(maps.Keys(union))
			for _, k := range keys {
				field := path + "." + k
				if !fieldName.MatchString(k) {
					field = path + "[" + strconv.Quote(k) + "]"
				}
				va, ok := a[k]
				if !ok {
					va = absent{}
				}
				vb, ok := b[k]
				if !ok {
					vb = absent{}
				}
				diffJSON(field, va, vb, lines)
			}
			return
		}
	case []any:
		if b, ok := b.([]any); ok {
			for i := range max(len(a), len(b)) {
				var va, vb any = absent{}, absent{}
				if i < len(a) {
					va = a[i]
				}
				if i < len(b) {
					vb = b[i]
				}
				diffJSON(fmt.Sprintf("%s[%d]", path, i), va, vb, lines)
			}
			return
		}
	}
	if !reflect.DeepEqual(a, b) {
		*lines = append(*lines, fmt.Sprintf("  %s: sent %s, got %s", strings.TrimPrefix(cmp.Or(path, "(the object)"), "."), jsonText(a), jsonText(b)))
	}
}

// jsonText is v, decoded JSON, as compact JSON, or (absent).
func jsonText(v any) string {
	if _, ok := v.(absent); ok {
		return "(absent)"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Convert sends obj to h, a conversion webhook, in a ConversionReview to
// apiVersion and returns the converted object, failing t if the
// conversion fails.
func Convert(t testing.TB, h http.Handler, apiVersion string, obj any) []byte {
	t.Helper()
	data, ok := obj.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(obj); err != nil {
			t.Fatalf("webhooktest: encoding %T: %v", obj, err)
		}
	}
	review := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: "webhooktest-conversion", DesiredAPIVersion: apiVersion,
			Objects: []runtime.RawExtension{{Raw: data}}},
	}
	var out apiextensionsv1.ConversionReview
	post(t, h, review, &out)
	switch {
	case out.Response == nil:
		t.Fatalf("webhooktest: the ConversionReview answered has no response")
	case out.Response.UID != review.Request.UID:
		t.Fatalf("webhooktest: the response has UID %q, the request %q", out.Response.UID, review.Request.UID)
	case out.Response.Result.Status != metav1.StatusSuccess:
		t.Fatalf("webhooktest: converting to %s failed: %s\n%s", apiVersion, out.Response.Result.Message, data)
	case len(out.Response.ConvertedObjects) != 1:
		t.Fatalf("webhooktest: %d objects converted, sent 1", len(out.Response.ConvertedObjects))
	}
	return out.Response.ConvertedObjects[0].Raw
}

// post sends in to h as the API server does and decodes its answer.
func post(t testing.TB, h http.Handler, in, out any) {
	t.Helper()
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("webhooktest: encoding the review: %v", err)
	}
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("webhooktest: HTTP %d: %s", w.Code, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
		t.Fatalf("webhooktest: the answer is not a review: %v\n%s", err, w.Body)
	}
}

// freeFormFuncs fill the free-form fields, apiextensionsv1.JSON and
// runtime.RawExtension, with what an API server stores in them: valid
// JSON, compact as encoding/json writes it, never null (so that a pointer
// to one, which the filler leaves nil at times, comes back as it went);
// any JSON value in an apiextensionsv1.JSON, a JSON object in a
// runtime.RawExtension, whose schema is type: object.
func freeFormFuncs(serializer.CodecFactory) []any {
	return []any{
		func(j *apiextensionsv1.JSON, c randfill.Continue) { j.Raw = randomJSON(randomValue(c, 3, false)) },
		func(r *runtime.RawExtension, c randfill.Continue) {
			r.Raw, r.Object = randomJSON(randomObject(c, 3)), nil
		},
	}
}

// randomJSON returns v as JSON, compact as encoding/json writes it.
func randomJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("webhooktest: encoding a random JSON value: %v", err))
	}
	return data
}

// randomValue returns a random value of a JSON document, depth levels
// deep at most, null only if null is true.
func randomValue(c randfill.Continue, depth int, null bool) any {
	kinds := 4
	if depth > 0 {
		kinds = 6
	}
	switch k := c.Rand.Intn(kinds); {
	case k == 0 && null:
		return nil
	case k <= 1:
		return randomWord(c)
	case k == 2:
		return c.Rand.Int63n(1<<53) - 1<<52
	case k == 3:
		return c.Bool()
	case k == 4:
		list := make([]any, c.Rand.Intn(4))
		for i := range list {
			list[i] = randomValue(c, depth-1, true)
		}
		return list
	default:
		return randomObject(c, depth)
	}
}

// randomObject returns a random JSON object whose values are depth-1
// levels deep at most.
func randomObject(c randfill.Continue, depth int) map[string]any {
	object := map[string]any{}
	for range c.Rand.Intn(4) {
		object[randomWord(c)] = randomValue(c, depth-1, true)
	}
	return object
}

// randomWord returns a string of up to 8 letters and digits.
func randomWord(c randfill.Continue) string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, c.Rand.Intn(9))
	for i := range b {
		b[i] = chars[c.Rand.Intn(len(chars))]
	}
	return string(b)
}
