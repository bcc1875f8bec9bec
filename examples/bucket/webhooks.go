package main

import (
	"context"
	"errors"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	storagev1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	storagev1alpha1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1alpha1"
	"github.com/ctrlkit/ctrlkit/webhook"
)

// The webhooks, their Service and the CRD's conversion, from which apigen
// generates deploy/webhook.yaml, deploy/crd-conversion.yaml and
// zz_generated.webhooks.go: the paths served below, and the certificate's
// hosts and the objects that get its CA (--webhook-cert-secret).
//
// +kubebuilder:webhookconfiguration:mutating=true,name=bucket-operator
// +kubebuilder:webhookconfiguration:mutating=false,name=bucket-operator
// +kubebuilder:webhook:mutating=true,path=/default-bucket,name=default.buckets.storage.ctrlkit.io,groups=storage.ctrlkit.io,versions=v1,resources=buckets,verbs=create;update,failurePolicy=fail,matchPolicy=Equivalent,sideEffects=None,timeoutSeconds=10,admissionReviewVersions=v1,serviceName=bucket-webhook,serviceNamespace=bucket-system
// +kubebuilder:webhook:mutating=false,path=/validate-bucket,name=validate.buckets.storage.ctrlkit.io,groups=storage.ctrlkit.io,versions=v1,resources=buckets,verbs=create;update,failurePolicy=fail,matchPolicy=Equivalent,sideEffects=None,timeoutSeconds=10,admissionReviewVersions=v1,serviceName=bucket-webhook,serviceNamespace=bucket-system
// +ctrlkit:conversionwebhook:crd=buckets.storage.ctrlkit.io,path=/convert,serviceName=bucket-webhook,serviceNamespace=bucket-system

// With --webhook-cert-secret the operator keeps its certificate in that
// Secret of its namespace and publishes its CA; added to the roles
// generated into deploy/role.yaml.
//
// +kubebuilder:rbac:groups="",namespace=bucket-system,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=bucket-system,resources=secrets,verbs=get;update,resourceNames=bucket-webhook-certs
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;update,resourceNames=bucket-operator
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;patch,resourceNames=buckets.storage.ctrlkit.io

// bucketWebhooks are the Bucket API's webhooks: conversion between
// v1alpha1 and v1, through v1, and the defaults and validation of v1
// Buckets, which the API server also sends v1alpha1 Buckets to, converted.
type bucketWebhooks struct {
	defaultRegion string   // of a Bucket without a region; none if empty
	regions       []string // the regions a Bucket may name; any if empty
}

// bucketVersions are the versions of the Bucket API and their conversions
// through v1.
func bucketVersions() []webhook.Version[*storagev1.Bucket] {
	return []webhook.Version[*storagev1.Bucket]{
		webhook.Hub[*storagev1.Bucket](storagev1.SchemeGroupVersion.String()),
		webhook.Spoke(storagev1alpha1.SchemeGroupVersion.String(), storagev1alpha1.ConvertToV1, storagev1alpha1.ConvertFromV1),
	}
}

// handlers returns the webhooks at their paths, for Flags.Webhooks.
func (w bucketWebhooks) handlers() ([]webhook.Option, error) {
	convert, errConvert := webhook.Conversion(bucketVersions())
	defaults, errDefaults := webhook.Mutating(w.defaults)
	validate, errValidate := webhook.Validating(w.validate)
	return []webhook.Option{webhook.Handle(webhookPathConvert, convert), webhook.Handle(webhookPathDefaultBucket, defaults), webhook.Handle(webhookPathValidateBucket, validate)},
		errors.Join(errConvert, errDefaults, errValidate)
}

// defaults gives a Bucket without a region the operator's default one, and
// one without a deletion policy DeletionPolicyDelete.
func (w bucketWebhooks) defaults(_ context.Context, req webhook.Request[*storagev1.Bucket]) error {
	spec := &req.Object.Spec
	if spec.Region == "" {
		spec.Region = w.defaultRegion
	}
	if spec.DeletionPolicy == "" {
		spec.DeletionPolicy = storagev1.DeletionPolicyDelete
	}
	return nil
}

// validate refuses a Bucket without a region or with one the storage
// service does not serve, and warns when a Bucket comes to keep its bucket
// after its deletion.
func (w bucketWebhooks) validate(_ context.Context, req webhook.Request[*storagev1.Bucket]) (warnings []string, errs field.ErrorList) {
	if req.Object == nil { // a DELETE, which deploy/webhook.yaml does not send
		return nil, nil
	}
	spec, path := req.Object.Spec, field.NewPath("spec")
	switch {
	case spec.Region == "":
		errs = append(errs, field.Required(path.Child("region"), "the operator has no --default-region to set"))
	case len(w.regions) > 0 && !slices.Contains(w.regions, spec.Region):
		errs = append(errs, field.NotSupported(path.Child("region"), spec.Region, w.regions))
	}
	if spec.DeletionPolicy == storagev1.DeletionPolicyRetain && (req.OldObject == nil || req.OldObject.Spec.DeletionPolicy != spec.DeletionPolicy) {
		warnings = append(warnings, "spec.deletionPolicy: Retain: the bucket stays in the storage service after the Bucket is deleted")
	}
	return warnings, errs
}
