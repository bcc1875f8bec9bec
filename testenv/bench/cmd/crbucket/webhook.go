package main

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	storagev1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	storagev1alpha1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1alpha1"
)

// SetupBucketWebhookWithManager registers the Bucket API's webhooks with
// the manager's webhook server: conversion between v1alpha1 and v1,
// through v1 (at /convert, where controller-runtime serves it), and the
// defaults and validation of v1 Buckets, which the API server also sends
// v1alpha1 Buckets to, converted. Their paths are those of
// examples/bucket/deploy/webhook.yaml, which both operators serve.
func SetupBucketWebhookWithManager(mgr ctrl.Manager, defaultRegion string, regions []string) error {
	return ctrl.NewWebhookManagedBy(mgr, &storagev1.Bucket{}).
		WithDefaulter(&BucketCustomDefaulter{DefaultRegion: defaultRegion}).
		WithDefaulterCustomPath("/default-bucket").
		WithValidator(&BucketCustomValidator{Regions: regions}).
		WithValidatorCustomPath("/validate-bucket").
		WithConverter(conversion.NewHubSpokeConverter(&storagev1.Bucket{},
			conversion.NewSpokeConverter(&storagev1alpha1.Bucket{}, convertBucketFromV1, convertBucketToV1))).
		Complete()
}

// The webhook configurations of examples/bucket/deploy/webhook.yaml, as
// kubebuilder's markers declare them.
//
// +kubebuilder:webhook:path=/default-bucket,mutating=true,failurePolicy=fail,sideEffects=None,matchPolicy=Equivalent,groups=storage.ctrlkit.io,resources=buckets,verbs=create;update,versions=v1,name=default.buckets.storage.ctrlkit.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-bucket,mutating=false,failurePolicy=fail,sideEffects=None,matchPolicy=Equivalent,groups=storage.ctrlkit.io,resources=buckets,verbs=create;update,versions=v1,name=validate.buckets.storage.ctrlkit.io,admissionReviewVersions=v1

// BucketCustomDefaulter sets the defaults of a Bucket when it is created or
// updated.
type BucketCustomDefaulter struct {
	DefaultRegion string // of a Bucket without a region; none if empty
}

// Default gives a Bucket without a region the operator's default one, and
// one without a deletion policy DeletionPolicyDelete.
func (d *BucketCustomDefaulter) Default(_ context.Context, bucket *storagev1.Bucket) error {
	if bucket.Spec.Region == "" {
		bucket.Spec.Region = d.DefaultRegion
	}
	if bucket.Spec.DeletionPolicy == "" {
		bucket.Spec.DeletionPolicy = storagev1.DeletionPolicyDelete
	}
	return nil
}

// BucketCustomValidator validates a Bucket when it is created or updated.
type BucketCustomValidator struct {
	Regions []string // the regions a Bucket may name; any if empty
}

// ValidateCreate validates a new Bucket.
func (v *BucketCustomValidator) ValidateCreate(_ context.Context, bucket *storagev1.Bucket) (admission.Warnings, error) {
	return v.validate(nil, bucket)
}

// ValidateUpdate validates a changed Bucket.
func (v *BucketCustomValidator) ValidateUpdate(_ context.Context, old, bucket *storagev1.Bucket) (admission.Warnings, error) {
	return v.validate(old, bucket)
}

// ValidateDelete allows any deletion; webhook.yaml does not send them.
func (v *BucketCustomValidator) ValidateDelete(context.Context, *storagev1.Bucket) (admission.Warnings, error) {
	return nil, nil
}

// validate refuses a Bucket without a region or with one the storage
// service does not serve, and warns when a Bucket comes to keep its bucket
// after its deletion; old is nil on creation.
func (v *BucketCustomValidator) validate(old, bucket *storagev1.Bucket) (admission.Warnings, error) {
	var warnings admission.Warnings
	var errs field.ErrorList
	spec, path := bucket.Spec, field.NewPath("spec")
	switch {
	case spec.Region == "":
		errs = append(errs, field.Required(path.Child("region"), "the operator has no --default-region to set"))
	case len(v.Regions) > 0 && !slices.Contains(v.Regions, spec.Region):
		errs = append(errs, field.NotSupported(path.Child("region"), spec.Region, v.Regions))
	}
	if spec.DeletionPolicy == storagev1.DeletionPolicyRetain && (old == nil || old.Spec.DeletionPolicy != spec.DeletionPolicy) {
		warnings = append(warnings, "spec.deletionPolicy: Retain: the bucket stays in the storage service after the Bucket is deleted")
	}
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(storagev1.SchemeGroupVersion.WithKind("Bucket").GroupKind(), bucket.Name, errs)
	}
	return warnings, nil
}
