package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/ctrlkit/ctrlkit/examples/internal/manifest"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/webhook"
)

func TestDeploymentGracePeriodCoversShutdown(t *testing.T) {
	manifest.RequireGraceCoversShutdown(t, "deploy/deployment.yaml", func(fs *flag.FlagSet) *operator.Flags { return &bindFlags(fs).Flags })
}

// decodeAll decodes each YAML document of path into a T.
func decodeAll[T any](t *testing.T, path string) []*T {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*T
	for {
		obj := new(T)
		if err := dec.Decode(obj); errors.Is(err, io.EOF) {
			return out
		} else {
			require.NoError(t, err, path)
		}
		out = append(out, obj)
	}
}

// The webhooks of deploy/ reach the operator as the Deployment runs it:
// the configurations and the CRD call the Service at paths the operator
// serves, the Service reaches the container's webhook port, the
// certificate the operator issues is valid for the Service's name, and
// its Secret is the one the roles let it write.
func TestDeployedWebhooksReachTheOperator(t *testing.T) {
	d := decodeAll[appsv1.Deployment](t, "deploy/deployment.yaml")[0]
	fs := flag.NewFlagSet("manifest", flag.ContinueOnError)
	o := bindFlags(fs)
	require.NoError(t, fs.Parse(podArgs(d)))
	opts, err := bucketWebhooks{}.handlers()
	require.NoError(t, err)
	srv, err := webhook.NewServer(o.WebhookAddr, noCertificate{}, opts...)
	require.NoError(t, err)

	var service corev1.Service
	var clientConfigs []admissionregistrationv1.WebhookClientConfig
	for _, doc := range decodeAll[map[string]any](t, "deploy/webhook.yaml") {
		switch (*doc)["kind"] {
		case "Service":
			service = *decodeAs[corev1.Service](t, doc)
		case "MutatingWebhookConfiguration":
			c := decodeAs[admissionregistrationv1.MutatingWebhookConfiguration](t, doc)
			assert.Equal(t, o.WebhookCABundles.MutatingWebhookConfigurations, []string{c.Name}, "the CA is published in it")
			for _, w := range c.Webhooks {
				clientConfigs = append(clientConfigs, w.ClientConfig)
			}
		case "ValidatingWebhookConfiguration":
			c := decodeAs[admissionregistrationv1.ValidatingWebhookConfiguration](t, doc)
			assert.Equal(t, o.WebhookCABundles.ValidatingWebhookConfigurations, []string{c.Name}, "the CA is published in it")
			for _, w := range c.Webhooks {
				clientConfigs = append(clientConfigs, w.ClientConfig)
			}
		}
	}
	crd := decodeAll[apiextensionsv1.CustomResourceDefinition](t, "deploy/crd-conversion.yaml")[0]
	conversion := crd.Spec.Conversion.Webhook.ClientConfig
	clientConfigs = append(clientConfigs, admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: conversion.Service.Namespace, Name: conversion.Service.Name, Path: conversion.Service.Path, Port: conversion.Service.Port}})

	require.Len(t, clientConfigs, 3)
	var paths []string
	for _, cc := range clientConfigs {
		require.NotNil(t, cc.Service)
		assert.Equal(t, service.Name, cc.Service.Name)
		assert.Equal(t, service.Namespace, cc.Service.Namespace)
		if cc.Service.Port != nil {
			assert.Equal(t, service.Spec.Ports[0].Port, *cc.Service.Port)
		} else {
			assert.Equal(t, int32(443), service.Spec.Ports[0].Port, "the port the API server calls by default")
		}
		paths = append(paths, *cc.Service.Path)
	}
	assert.ElementsMatch(t, srv.Paths(), paths, "every webhook the operator serves is configured, at its path")
	assert.Equal(t, []string{crd.Name}, o.WebhookCABundles.CRDs, "the CA is published in the CRD")

	pod := d.Spec.Template
	for k, v := range service.Spec.Selector {
		assert.Equal(t, v, pod.Labels[k], "the Service selects the operator's pods")
	}
	_, port, _ := strings.Cut(o.WebhookAddr, ":")
	target := service.Spec.Ports[0].TargetPort
	i := slices.IndexFunc(pod.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool {
		return target.Type == intstr.String && p.Name == target.StrVal || target.Type == intstr.Int && p.ContainerPort == target.IntVal
	})
	require.GreaterOrEqual(t, i, 0, "the Service's target port is a port of the container")
	assert.Equal(t, port, strconv.Itoa(int(pod.Spec.Containers[0].Ports[i].ContainerPort)), "--webhook-bind-address")

	assert.Contains(t, o.WebhookCertHosts, service.Name+"."+service.Namespace+".svc", "the name the API server verifies")
	ns, name, _ := strings.Cut(o.WebhookCertSecret, "/")
	var granted bool
	for _, role := range decodeAll[rbacv1.Role](t, "deploy/role.yaml") {
		for _, rule := range role.Rules {
			granted = granted || role.Namespace == ns && slices.Contains(rule.Resources, "secrets") &&
				slices.Contains(rule.ResourceNames, name) && slices.Contains(rule.Verbs, "update")
		}
	}
	assert.True(t, granted, "the roles let the operator update its Secret %s", o.WebhookCertSecret)
}

// podArgs is the first container's arguments as the kubelet runs them:
// $(VAR) replaced by the container's environment, where a variable taken
// from metadata.namespace is the Deployment's namespace.
func podArgs(d *appsv1.Deployment) []string {
	c := d.Spec.Template.Spec.Containers[0]
	var pairs []string
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
			v = d.Namespace
		}
		pairs = append(pairs, "$("+e.Name+")", v)
	}
	expand := strings.NewReplacer(pairs...)
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = expand.Replace(a)
	}
	return args
}

// decodeAs converts a decoded document into T.
func decodeAs[T any](t *testing.T, doc *map[string]any) *T {
	t.Helper()
	data, err := json.Marshal(*doc)
	require.NoError(t, err)
	obj := new(T)
	require.NoError(t, utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), len(data)).Decode(obj))
	return obj
}
