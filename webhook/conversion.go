package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	kjson "sigs.k8s.io/json"
)

// Version is one version of a custom resource, with its conversion to and
// from the hub type H through which a Conversion handler converts between
// any two versions. Make it with Spoke or Hub.
type Version[H runtime.Object] struct {
	apiVersion string
	newObject  func() runtime.Object
	toHub      func(src runtime.Object, dst H) error
	fromHub    func(src H, dst runtime.Object) error
}

// APIVersion is the version's group/version, such as
// "samplecontroller.k8s.io/v1alpha1".
func (v Version[H]) APIVersion() string { return v.apiVersion }

// New returns an empty object of the version's Go type.
func (v Version[H]) New() runtime.Object { return v.newObject() }

// Spoke is the version apiVersion of a custom resource, whose objects have
// the Go type T (a pointer to a struct): to fills a hub object from one of
// T, from fills an object of T from a hub object. Both must carry the
// metadata over unchanged apart from labels and annotations, as the API
// server requires of a conversion, and should keep what the other version
// cannot express (in an annotation, say) so that a round trip loses
// nothing.
func Spoke[T, H runtime.Object](apiVersion string, to func(src T, dst H) error, from func(src H, dst T) error) Version[H] {
	return Version[H]{
		apiVersion: apiVersion,
		newObject:  func() runtime.Object { return newOf[T]() },
		toHub:      func(src runtime.Object, dst H) error { return to(src.(T), dst) },
		fromHub:    func(src H, dst runtime.Object) error { return from(src, dst.(T)) },
	}
}

// Hub is the version apiVersion whose Go type is the hub type H itself.
func Hub[H runtime.Object](apiVersion string) Version[H] {
	return Version[H]{
		apiVersion: apiVersion,
		newObject:  func() runtime.Object { return newOf[H]() },
		toHub:      func(src runtime.Object, dst H) error { return copyInto(src, dst) },
		fromHub:    func(src H, dst runtime.Object) error { return copyInto(src, dst) },
	}
}

// copyInto sets *dst to a deep copy of *src, both of one pointer type.
func copyInto(src, dst runtime.Object) error {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
	return nil
}

// newOf returns a new, empty T, a pointer to a struct.
func newOf[T runtime.Object]() T {
	return reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
}

// Conversion returns the handler of a CustomResourceDefinition's conversion
// webhook (spec.conversion.strategy: Webhook) for the kind named after the
// hub type H (WithKind says otherwise): it converts every object of a
// ConversionReview to the desired version through H, from and to the
// versions given. A review is converted whole or refused whole: an object
// of an unknown version or kind, one that does not decode, a conversion
// function's error or panic, and a conversion that changes the object's
// name, namespace or UID fail it with their reason.
func Conversion[H runtime.Object](versions []Version[H], opts ...Option) (http.Handler, error) {
	cfg, err := handlerConfig[H]("Conversion", opts)
	if err != nil {
		return nil, err
	}
	c := &conversion[H]{kind: cfg.kind, versions: map[string]Version[H]{}}
	for _, v := range versions {
		if _, err := schema.ParseGroupVersion(v.apiVersion); err != nil || v.apiVersion == "" || v.newObject == nil {
			return nil, fmt.Errorf("webhook: Conversion: version %q is not a group/version made by Spoke or Hub", v.apiVersion)
		}
		if _, dup := c.versions[v.apiVersion]; dup {
			return nil, fmt.Errorf("webhook: Conversion: version %s given twice", v.apiVersion)
		}
		c.versions[v.apiVersion] = v
	}
	if len(c.versions) < 2 {
		return nil, errors.New("webhook: Conversion needs at least two versions")
	}
	return c, nil
}

// conversion serves ConversionReviews.
type conversion[H runtime.Object] struct {
	kind     string
	versions map[string]Version[H]
}

// ServeHTTP answers one ConversionReview.
func (c *conversion[H]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	review, status, err := readReview[apiextensionsv1.ConversionReview](w, r)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	if review.Request == nil || review.Kind != "ConversionReview" || review.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
		http.Error(w, fmt.Sprintf("webhook: expected a ConversionReview of %s with a request, got kind %q of %q",
			apiextensionsv1.SchemeGroupVersion, review.Kind, review.APIVersion), http.StatusBadRequest)
		return
	}
	req := review.Request
	logger := klog.FromContext(r.Context()).WithValues("kind", c.kind, "desiredAPIVersion", req.DesiredAPIVersion, "uid", req.UID)
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID}
	converted, err := c.convertAll(klog.NewContext(r.Context(), logger), req)
	if err != nil {
		logger.V(2).Info("Conversion refused", "err", err)
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity,
			Reason: metav1.StatusReasonInvalid, Message: err.Error()}
	} else {
		resp.ConvertedObjects = converted
		resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	}
	review.Request, review.Response = nil, resp
	writeJSON(w, review)
}

// convertAll converts every object of req, or none.
func (c *conversion[H]) convertAll(ctx context.Context, req *apiextensionsv1.ConversionRequest) ([]runtime.RawExtension, error) {
	to, ok := c.versions[req.DesiredAPIVersion]
	if !ok {
		return nil, fmt.Errorf("%s has no version %q to convert to", c.kind, req.DesiredAPIVersion)
	}
	out := make([]runtime.RawExtension, 0, len(req.Objects))
	for i, raw := range req.Objects {
		data, err := c.convert(ctx, raw.Raw, to)
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		out = append(out, runtime.RawExtension{Raw: data})
	}
	return out, nil
}

// convert converts one object, encoded as JSON, to the version to.
func (c *conversion[H]) convert(ctx context.Context, raw []byte, to Version[H]) (_ []byte, err error) {
	var typeMeta metav1.TypeMeta
	if err := json.Unmarshal(raw, &typeMeta); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if typeMeta.Kind != c.kind {
		return nil, fmt.Errorf("this webhook converts %s objects, not %q", c.kind, typeMeta.Kind)
	}
	from, ok := c.versions[typeMeta.APIVersion]
	if !ok {
		return nil, fmt.Errorf("%s has no version %q to convert from", c.kind, typeMeta.APIVersion)
	}
	if from.apiVersion == to.apiVersion {
		return raw, nil
	}
	src := from.New()
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, src); err != nil {
		return nil, fmt.Errorf("decoding %s %s: %w", from.apiVersion, c.kind, err)
	}
	defer func() {
		if p := recover(); p != nil {
			klog.FromContext(ctx).Error(nil, "Conversion panicked", "panic", p)
			err = fmt.Errorf("converting from %s to %s panicked: %v", from.apiVersion, to.apiVersion, p)
		}
	}()
	hub := newOf[H]()
	if err := from.toHub(src, hub); err != nil {
		return nil, fmt.Errorf("converting %s to the hub: %w", from.apiVersion, err)
	}
	dst := to.New()
	if err := to.fromHub(hub, dst); err != nil {
		return nil, fmt.Errorf("converting the hub to %s: %w", to.apiVersion, err)
	}
	if err := sameIdentity(src, dst); err != nil {
		return nil, fmt.Errorf("converting from %s to %s: %w", from.apiVersion, to.apiVersion, err)
	}
	gv, _ := schema.ParseGroupVersion(to.apiVersion) // checked by Conversion
	dst.GetObjectKind().SetGroupVersionKind(gv.WithKind(c.kind))
	return json.Marshal(dst)
}

// sameIdentity fails if dst lost src's name, namespace or UID.
func sameIdentity(src, dst runtime.Object) error {
	s, err := meta.Accessor(src)
	if err != nil {
		return err
	}
	d, err := meta.Accessor(dst)
	if err != nil {
		return err
	}
	for _, f := range []struct{ name, from, to string }{
		{"metadata.name", s.GetName(), d.GetName()},
		{"metadata.namespace", s.GetNamespace(), d.GetNamespace()},
		{"metadata.uid", string(s.GetUID()), string(d.GetUID())},
	} {
		if f.from != f.to {
			return fmt.Errorf("%s changed from %q to %q: conversion functions must copy the metadata", f.name, f.from, f.to)
		}
	}
	return nil
}
