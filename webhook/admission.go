package webhook

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	kjson "sigs.k8s.io/json"

	"github.com/ctrlkit/ctrlkit/metrics"
)

// MaxRequestBytes is the largest request body a webhook reads: an
// AdmissionReview carries up to two objects (the new and the old one) of
// at most the API server's 3 MiB each, and their envelope.
const MaxRequestBytes = 7 << 20

// Request is one admission request for an object of type T, decoded.
type Request[T runtime.Object] struct {
	// Operation is CREATE, UPDATE, DELETE or CONNECT.
	Operation admissionv1.Operation
	// Object is the object to be stored: set for CREATE and UPDATE, nil
	// for DELETE and CONNECT. The object of a CONNECT request (to a
	// subresource such as pods/exec, pods/attach or pods/portforward) is
	// the options of the connection, such as a PodExecOptions, not an
	// object of T's kind: it is not decoded, and stays as the API server
	// sent it in Admission.Object.
	Object T
	// OldObject is the object stored before: set for UPDATE and DELETE,
	// nil for CREATE and CONNECT.
	OldObject T
	// SubResource is the subresource written, such as "status", or empty
	// for the object itself.
	SubResource string
	// DryRun is true when the API server will not persist the request:
	// the handler must then have no side effects (a webhook configuration
	// says so with sideEffects: None or NoneOnDryRun).
	DryRun bool
	// Admission is the request as the API server sent it, with the user,
	// the resource and the options of the operation.
	Admission *admissionv1.AdmissionRequest
}

// ValidateFunc checks a request. It returns the field errors that refuse
// it, shown to the client as the API server shows its own validation
// errors (an error of type field.ErrorTypeInternal refuses it as an
// internal error instead), and warnings the client shows whether or not
// the request is refused. No errors admit the request.
type ValidateFunc[T runtime.Object] func(ctx context.Context, req Request[T]) (warnings []string, errs field.ErrorList)

// DefaultFunc sets defaults on req.Object, a CREATE or UPDATE request's
// object, in place; the API server receives what it changed as a JSON
// patch. An error refuses the request: an *apierrors.StatusError with its
// own status, any other error as an internal error.
type DefaultFunc[T runtime.Object] func(ctx context.Context, req Request[T]) error

// Validating returns the handler of a validating admission webhook for
// objects of type T (a pointer to an API type, such as *appsv1.Deployment):
// it calls validate for every CREATE, UPDATE and DELETE request of T's
// kind (Object is nil for a DELETE: the object is OldObject).
//
// A CONNECT request (pods/exec, for instance) carries no object, only the
// options of the connection, and the API server sends it with the
// options' kind (PodExecOptions for pods/exec). validate decides it, with
// Object and OldObject nil and the options in Admission.Object (see
// Request.Object), when T is the options' type (a validator of
// *corev1.PodExecOptions), or when T is the type of the object connected
// to (*corev1.Pod for pods/exec, pods/attach or pods/portforward) and the
// handler was made WithConnect. A handler of the object's type not made
// WithConnect never admits a CONNECT: it refuses it as forbidden, saying
// that WithConnect is missing, so that a webhook configuration listing
// CONNECT is never a check silently skipped.
//
// A request for another kind, whose object does not decode, or that is
// not an AdmissionReview is refused with its reason; validate panicking
// refuses the request as an internal error. T's kind is its Go type's
// name unless WithKind says otherwise.
func Validating[T runtime.Object](validate ValidateFunc[T], opts ...Option) (http.Handler, error) {
	if validate == nil {
		return nil, errors.New("webhook: Validating needs a validate function")
	}
	cfg, err := handlerConfig[T]("Validating", opts)
	if err != nil {
		return nil, err
	}
	return newAdmission(opts, "Validating", func(ctx context.Context, req Request[T]) *admissionv1.AdmissionResponse {
		if ar := req.Admission; ar.Operation == admissionv1.Connect && ar.Kind.Kind != cfg.kind && !cfg.connect {
			return refusal(apierrors.NewForbidden(schema.GroupResource{Group: ar.Resource.Group, Resource: ar.Resource.Resource}, ar.Name,
				fmt.Errorf("the validating webhook of %s objects was not made with webhook.WithConnect(), so it refuses the CONNECT of %s/%s "+
					"(kind %s) rather than admit it unchecked: make it WithConnect for its validator to decide CONNECT requests, "+
					"or leave CONNECT out of its webhook configuration", cfg.kind, ar.Resource.Resource, ar.SubResource, ar.Kind.Kind)))
		}
		warnings, errs := validate(ctx, req)
		if len(errs) == 0 {
			return &admissionv1.AdmissionResponse{Allowed: true, Warnings: warnings}
		}
		resp := refusal(invalid(req.Admission, errs))
		resp.Warnings = warnings
		return resp
	})
}

// Mutating returns the handler of a mutating admission webhook that sets
// defaults on objects of type T: it calls defaults for CREATE and UPDATE
// requests of T's kind and admits the others unchanged, DELETE and
// CONNECT (whose options it does not decode, see Request.Object; a
// CONNECT of the kind of the options of a connection to T's objects,
// PodExecOptions for pods/exec of a Pod, is T's as for Validating). The
// patch changes only what defaults changed, so fields the Go type does not
// know are kept, and numbers are patched exactly as the Go type encodes
// them (an int64 beyond 2^53 included). Requests are refused as by
// Validating.
func Mutating[T runtime.Object](defaults DefaultFunc[T], opts ...Option) (http.Handler, error) {
	if defaults == nil {
		return nil, errors.New("webhook: Mutating needs a defaults function")
	}
	return newAdmission(opts, "Mutating", func(ctx context.Context, req Request[T]) *admissionv1.AdmissionResponse {
		if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
		before, err := json.Marshal(req.Object)
		if err != nil {
			return refusal(apierrors.NewInternalError(fmt.Errorf("encoding the decoded object: %w", err)))
		}
		if err := defaults(ctx, req); err != nil {
			if status, ok := errors.AsType[*apierrors.StatusError](err); ok {
				return refusal(status)
			}
			return refusal(apierrors.NewInternalError(err))
		}
		after, err := json.Marshal(req.Object)
		if err != nil {
			return refusal(apierrors.NewInternalError(fmt.Errorf("encoding the defaulted object: %w", err)))
		}
		ops, err := jsonPatch(req.Admission.Object.Raw, before, after)
		if err != nil {
			return refusal(apierrors.NewInternalError(err))
		}
		resp := &admissionv1.AdmissionResponse{Allowed: true}
		if len(ops) > 0 {
			patch, err := json.Marshal(ops)
			if err != nil {
				return refusal(apierrors.NewInternalError(err))
			}
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = patch, &pt
		}
		return resp
	})
}

// Option configures Validating, Mutating, Conversion or NewServer, each
// option says which. A nil Option is ignored.
type Option func(*config)

type config struct {
	kind    string
	connect bool
	routes  []route
	metrics *metrics.Recorder
	tls     []func(*tls.Config)
	errs    []error
}

// route is a handler and its path.
type route struct {
	path    string
	handler http.Handler
}

func configure(opts []Option) (config, error) {
	var cfg config
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	return cfg, errors.Join(cfg.errs...)
}

// handlerConfig is the configuration of a handler constructor, name, for
// objects of type T: its kind is T's type name unless WithKind says
// otherwise.
func handlerConfig[T runtime.Object](name string, opts []Option) (config, error) {
	cfg, err := configure(opts)
	if err == nil && (len(cfg.routes) > 0 || cfg.metrics != nil || len(cfg.tls) > 0) {
		err = errors.New("Handle, WithMetrics and WithTLSConfig apply to NewServer")
	}
	if err == nil && cfg.connect && name != "Validating" {
		err = errors.New("WithConnect applies to Validating")
	}
	if t := reflect.TypeFor[T](); err == nil && (t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct) {
		err = fmt.Errorf("needs a pointer to an API type, not %v", t)
	}
	if err != nil {
		return cfg, fmt.Errorf("webhook: %s: %w", name, err)
	}
	if cfg.kind == "" {
		cfg.kind = reflect.TypeFor[T]().Elem().Name()
	}
	return cfg, nil
}

// WithConnect makes a handler of Validating for objects of an API type
// (such as *corev1.Pod) call its function for the CONNECT requests to
// the objects' subresources too (pods/exec, pods/attach,
// pods/portforward, ...), which the API server sends with the kind of
// the connection's options (PodExecOptions, ...) and which carry no
// object (see Request.Object), so that it can refuse connections; without
// it the handler refuses every CONNECT, saying that WithConnect is
// missing. A handler of the options' type itself (such as
// *corev1.PodExecOptions) calls its function for CONNECT requests of that
// kind with or without it. Mutating and Conversion refuse it: a defaulter
// is never called for a CONNECT.
func WithConnect() Option {
	return func(c *config) { c.connect = true }
}

// WithKind sets the kind of the objects a handler of Validating, Mutating
// or Conversion accepts, for a Go type named otherwise.
func WithKind(kind string) Option {
	return func(c *config) { c.kind = kind }
}

// admission serves AdmissionReviews for objects of type T.
type admission[T runtime.Object] struct {
	kind   string
	decide func(context.Context, Request[T]) *admissionv1.AdmissionResponse
}

func newAdmission[T runtime.Object](opts []Option, name string, decide func(context.Context, Request[T]) *admissionv1.AdmissionResponse) (http.Handler, error) {
	cfg, err := handlerConfig[T](name, opts)
	if err != nil {
		return nil, err
	}
	return &admission[T]{kind: cfg.kind, decide: decide}, nil
}

// ServeHTTP answers one AdmissionReview.
func (a *admission[T]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	review, status, err := readReview[admissionv1.AdmissionReview](w, r)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	if review.Request == nil || review.Kind != "AdmissionReview" ||
		(review.APIVersion != admissionv1.SchemeGroupVersion.String() && review.APIVersion != "admission.k8s.io/v1beta1") {
		http.Error(w, fmt.Sprintf("webhook: expected an AdmissionReview of admission.k8s.io/v1 or v1beta1 with a request, got kind %q of %q", review.Kind, review.APIVersion), http.StatusBadRequest)
		return
	}
	req := review.Request
	logger := klog.FromContext(r.Context()).WithValues("kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name,
		"operation", req.Operation, "uid", req.UID)
	ctx := klog.NewContext(r.Context(), logger)
	resp := a.admit(ctx, req)
	resp.UID = req.UID
	if !resp.Allowed {
		logger.V(2).Info("Refused", "reason", resp.Result.Message)
	}
	review.Request, review.Response = nil, resp
	writeJSON(w, review)
}

// admit decides one request.
func (a *admission[T]) admit(ctx context.Context, ar *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse) {
	switch ar.Operation {
	case admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
	default:
		return refusal(apierrors.NewBadRequest(fmt.Sprintf("unknown operation %q", ar.Operation)))
	}
	if ar.Kind.Kind != a.kind && (ar.Operation != admissionv1.Connect || !connectOptionsOf(a.kind, ar)) {
		return refusal(apierrors.NewBadRequest(fmt.Sprintf("this webhook admits %s objects, not %s", a.kind, ar.Kind.Kind)))
	}
	req := Request[T]{Operation: ar.Operation, SubResource: ar.SubResource, DryRun: ar.DryRun != nil && *ar.DryRun, Admission: ar}
	// The object of a CONNECT request is the options of the connection,
	// such as a PodExecOptions for pods/exec, not an object of T's kind:
	// it is left to the handler in req.Admission.Object.
	if ar.Operation != admissionv1.Connect {
		var err error
		if req.Object, err = decode[T](ar.Object); err != nil {
			return refusal(apierrors.NewBadRequest("the object does not decode: " + err.Error()))
		}
		if req.OldObject, err = decode[T](ar.OldObject); err != nil {
			return refusal(apierrors.NewBadRequest("the old object does not decode: " + err.Error()))
		}
	}
	switch {
	case (ar.Operation == admissionv1.Create || ar.Operation == admissionv1.Update) && isNil(req.Object):
		return refusal(apierrors.NewBadRequest(fmt.Sprintf("the %s request has no object", ar.Operation)))
	case (ar.Operation == admissionv1.Update || ar.Operation == admissionv1.Delete) && isNil(req.OldObject):
		return refusal(apierrors.NewBadRequest(fmt.Sprintf("the %s request has no old object", ar.Operation)))
	}
	defer func() {
		if p := recover(); p != nil {
			klog.FromContext(ctx).Error(nil, "Webhook panicked", "panic", p)
			resp = refusal(apierrors.NewInternalError(fmt.Errorf("the webhook panicked: %v", p)))
		}
	}()
	return a.decide(ctx, req)
}

// connectOptionsOf reports whether ar, a CONNECT request, is of the kind
// the API server gives the options of a connection to a subresource of
// objects of kind: the kind followed by the subresource's name and
// "Options", ignoring case (PodExecOptions for pods/exec, of kind Pod,
// PodPortForwardOptions for pods/portforward, NodeProxyOptions for
// nodes/proxy, ServiceProxyOptions for services/proxy).
func connectOptionsOf(kind string, ar *admissionv1.AdmissionRequest) bool {
	return ar.SubResource != "" && strings.EqualFold(ar.Kind.Kind, kind+ar.SubResource+"Options")
}

// decode returns the object of raw, or nil if there is none.
func decode[T runtime.Object](raw runtime.RawExtension) (T, error) {
	var zero T
	if len(raw.Raw) == 0 {
		return zero, nil
	}
	obj := newOf[T]()
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw.Raw, obj); err != nil {
		return zero, err
	}
	return obj, nil
}

func isNil[T runtime.Object](obj T) bool {
	return reflect.ValueOf(obj).IsNil()
}

// invalid is the error the API server would give for errs.
func invalid(ar *admissionv1.AdmissionRequest, errs field.ErrorList) *apierrors.StatusError {
	for _, e := range errs {
		if e.Type == field.ErrorTypeInternal {
			return apierrors.NewInternalError(errs.ToAggregate())
		}
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: ar.Kind.Group, Kind: ar.Kind.Kind}, ar.Name, errs)
}

// refusal is a response that refuses a request with err's status.
func refusal(err *apierrors.StatusError) *admissionv1.AdmissionResponse {
	status := err.Status()
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &status}
}

// readReview reads a review of type R from r, or says what is wrong with
// the request and its HTTP status.
func readReview[R any](w http.ResponseWriter, r *http.Request) (*R, int, error) {
	if r.Method != http.MethodPost {
		return nil, http.StatusMethodNotAllowed, fmt.Errorf("webhook: %s, not POST", r.Method)
	}
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("webhook: content type %q, not application/json", r.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("webhook: the request is larger than %d bytes", MaxRequestBytes)
		}
		return nil, http.StatusBadRequest, fmt.Errorf("webhook: reading the request: %w", err)
	}
	review := new(R)
	if err := kjson.UnmarshalCaseSensitivePreserveInts(body, review); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("webhook: the request is not a review: %w", err)
	}
	return review, http.StatusOK, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "webhook: encoding the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}
