package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
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
	"sigs.k8s.io/yaml"
)

// kubebuilderWebhooks are webhook markers as kubebuilder's scaffold writes
// them: no Service, no webhookconfiguration marker.
const kubebuilderWebhooks = `package webhooks

// +kubebuilder:webhook:path=/mutate-example-com-v1-thing,mutating=true,failurePolicy=fail,sideEffects=None,groups=example.com,resources=things,verbs=create;update,versions=v1,name=mthing-v1.kb.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-example-com-v1-thing,mutating=false,failurePolicy=fail,sideEffects=None,groups=example.com,resources=things,verbs=create;update,versions=v1,name=vthing-v1.kb.io,admissionReviewVersions=v1
// +ctrlkit:conversionwebhook:crd=things.example.com,path=/convert
// +kubebuilder:rbac:groups=example.com,resources=things,verbs=get;list;watch

// Serve serves them.
func Serve() {}
`

// kubebuilderDeployArgs generate the CRD, the roles, the webhooks and the
// deploy manifests of ./webhooks into deploy.
var kubebuilderDeployArgs = []string{"-out", "", "-crd", "deploy/crd", "-rbac", "deploy", "-rbac-role", "things-operator", "-rbac-paths", "./webhooks/...",
	"-webhook", "deploy", "-webhook-paths", "./webhooks/...",
	"-deploy", "deploy", "-deploy-namespace", "things-system", "-deploy-image", "example.com/things:v1"}

// writeFiles writes files (by path relative to dir) into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// Webhook markers that name no Service are called at the Service in the
// operator's namespace, -deploy-namespace: the Service, both
// configurations, the CRD's conversion, the certificate's hosts and its
// Secret agree with the Deployment. The configurations without a
// webhookconfiguration marker are named after the operator, not with
// controller-gen's placeholders that every such operator shares.
func TestWebhooksInTheDeployNamespace(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	writeFiles(t, dir, map[string]string{"webhooks/webhooks.go": kubebuilderWebhooks})
	code, stdout, stderr := apigen(t, dir, kubebuilderDeployArgs...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	files := tree(t, dir)

	docs := strings.Split(files["deploy/webhook.yaml"], "\n---\n")
	require.Len(t, docs, 3, files["deploy/webhook.yaml"])
	var svc corev1.Service
	require.NoError(t, yaml.Unmarshal([]byte(docs[0]), &svc))
	assert.Equal(t, "things-system", svc.Namespace, "the Service is in the operator's namespace")
	var mutating admissionregistrationv1.MutatingWebhookConfiguration
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &mutating))
	var validating admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[2]), &validating))
	assert.Equal(t, "things-operator", mutating.Name, "named after the operator")
	assert.Equal(t, "things-operator", validating.Name, "named after the operator")
	require.Len(t, mutating.Webhooks, 1)
	require.Len(t, validating.Webhooks, 1)
	for _, s := range []*admissionregistrationv1.ServiceReference{mutating.Webhooks[0].ClientConfig.Service, validating.Webhooks[0].ClientConfig.Service} {
		require.NotNil(t, s)
		assert.Equal(t, svc.Name, s.Name, "the configuration calls the Service")
		assert.Equal(t, svc.Namespace, s.Namespace, "the configuration calls the Service")
	}
	assert.Contains(t, files["deploy/crd-conversion.yaml"], "namespace: things-system\n")
	assert.NotContains(t, files["deploy/crd-conversion.yaml"], "namespace: system\n")

	goFile := files["webhooks/zz_generated.webhooks.go"]
	assert.Contains(t, goFile, `var webhookCertHosts = []string{"things-operator-webhooks.things-system.svc"}`)
	assert.Contains(t, goFile, `MutatingWebhookConfigurations:   []string{"things-operator"}`)
	assert.Contains(t, goFile, `ValidatingWebhookConfigurations: []string{"things-operator"}`)

	var k struct {
		Resources []string
		Patches   []struct{ Path string }
	}
	require.NoError(t, yaml.Unmarshal([]byte(files["deploy/kustomization.yaml"]), &k))
	assert.Contains(t, k.Resources, "crd/example.com_things.yaml")
	assert.Contains(t, k.Patches, struct{ Path string }{"crd-conversion.yaml"}, "the CRD's conversion patch, with the CRD among the resources")

	var d appsv1.Deployment
	require.NoError(t, yaml.UnmarshalStrict([]byte(files["deploy/deployment.yaml"]), &d))
	assert.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "--webhook-cert-secret=$(POD_NAMESPACE)/things-operator-webhooks-certs", "the certificate's Secret in the pod's namespace")
	for rel, content := range files {
		if strings.HasPrefix(rel, "deploy/") {
			assert.NotContains(t, content, "namespace: system\n", "%s names controller-gen's namespace", rel)
		}
	}
}

// The CA is published only into the configurations that are generated: a
// webhookconfiguration marker of a kind without webhooks names none.
func TestCABundlesOfGeneratedConfigurations(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	writeFiles(t, dir, map[string]string{"webhooks/webhooks.go": `package webhooks

// +kubebuilder:webhookconfiguration:mutating=true,name=things-operator
// +kubebuilder:webhookconfiguration:mutating=false,name=things-operator
// +kubebuilder:webhook:path=/validate-thing,mutating=false,failurePolicy=fail,sideEffects=None,groups=example.com,resources=things,verbs=create;update,versions=v1,name=vthing-v1.kb.io,admissionReviewVersions=v1
`})
	code, stdout, stderr := apigen(t, dir, webhookArgs...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	files := tree(t, dir)
	assert.NotContains(t, files["deploy/webhook.yaml"], "kind: MutatingWebhookConfiguration")
	goFile := files["webhooks/zz_generated.webhooks.go"]
	assert.Contains(t, goFile, `MutatingWebhookConfigurations:   nil`)
	assert.Contains(t, goFile, `ValidatingWebhookConfigurations: []string{"things-operator"}`)
}

// allows tells whether a rule of rules grants verb on the resource of
// group named name.
func allows(rules []rbacv1.PolicyRule, group, resource, verb, name string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name)) {
			return true
		}
	}
	return false
}

// The deploy manifests grant the operator what its Deployment makes it do
// beyond its markers' roles (the leader election's Lease, the webhook
// certificate's Secret, the CA published into its configurations and its
// CRD's conversion), and create only the operator's own namespace, naming
// (not creating) those its markers' Roles are in.
func TestDeployGrantsWhatTheDeploymentDoes(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	writeFiles(t, dir, map[string]string{
		"webhooks/webhooks.go": kubebuilderWebhooks,
		"webhooks/rbac.go": "package webhooks\n\n// +kubebuilder:rbac:groups=\"\",namespace=things-data,resources=configmaps,verbs=get\n" +
			"// +kubebuilder:rbac:groups=\"\",namespace=kube-system,resources=configmaps,verbs=get\n",
	})
	code, stdout, stderr := apigen(t, dir, kubebuilderDeployArgs...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	files := tree(t, dir)

	var namespaces []string
	for _, doc := range strings.Split(files["deploy/namespace.yaml"], "\n---\n") {
		var ns corev1.Namespace
		require.NoError(t, yaml.Unmarshal([]byte(doc), &ns))
		namespaces = append(namespaces, ns.Name)
	}
	assert.Equal(t, []string{"things-system"}, namespaces, "only the operator's namespace: kubectl delete -k deletes what the kustomization lists")
	assert.Contains(t, files["deploy/namespace.yaml"], "must exist before kubectl apply -k: kube-system, things-data", "the namespaces of the Roles, named")

	// What the ServiceAccount is granted, by namespace ("" for the
	// cluster), through the roles of role.yaml and rbac.yaml.
	roles := map[string]*rbacv1.Role{}
	for _, file := range []string{"deploy/role.yaml", "deploy/rbac.yaml"} {
		for _, doc := range strings.Split(files[file], "\n---\n") {
			var r rbacv1.Role
			require.NoError(t, yaml.Unmarshal([]byte(doc), &r))
			if r.Kind == "Role" || r.Kind == "ClusterRole" {
				roles[r.Kind+"/"+r.Namespace+"/"+r.Name] = &r
			}
		}
	}
	granted := map[string][]rbacv1.PolicyRule{}
	for _, doc := range strings.Split(files["deploy/rbac.yaml"], "\n---\n") {
		var b rbacv1.RoleBinding
		require.NoError(t, yaml.Unmarshal([]byte(doc), &b))
		if b.Kind != "RoleBinding" && b.Kind != "ClusterRoleBinding" {
			continue
		}
		require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "things-operator", Namespace: "things-system"}}, b.Subjects)
		ns := ""
		if b.RoleRef.Kind == "Role" {
			ns = b.Namespace
		}
		r, ok := roles[b.RoleRef.Kind+"/"+ns+"/"+b.RoleRef.Name]
		require.True(t, ok, "the binding %s/%s binds a role of the manifests", b.Namespace, b.Name)
		granted[b.Namespace] = append(granted[b.Namespace], r.Rules...)
	}
	for _, tt := range []struct {
		namespace, group, resource, verb, name string
	}{
		{"things-system", "coordination.k8s.io", "leases", "get", "things-operator"},
		{"things-system", "coordination.k8s.io", "leases", "create", ""},
		{"things-system", "coordination.k8s.io", "leases", "update", "things-operator"},
		{"things-system", "", "secrets", "create", ""},
		{"things-system", "", "secrets", "get", "things-operator-webhooks-certs"},
		{"things-system", "", "secrets", "update", "things-operator-webhooks-certs"},
		{"", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "get", "things-operator"},
		{"", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "update", "things-operator"},
		{"", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "get", "things-operator"},
		{"", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "update", "things-operator"},
		{"", "apiextensions.k8s.io", "customresourcedefinitions", "get", "things.example.com"},
		{"", "apiextensions.k8s.io", "customresourcedefinitions", "patch", "things.example.com"},
	} {
		assert.True(t, allows(granted[tt.namespace], tt.group, tt.resource, tt.verb, tt.name), "%s %s.%s %s in %q", tt.verb, tt.resource, tt.group, tt.name, tt.namespace)
	}
	assert.False(t, allows(granted[""], "", "secrets", "get", "other"), "no other Secret")
	assert.False(t, allows(granted[""], "admissionregistration.k8s.io", "validatingwebhookconfigurations", "update", "other"), "no other configuration")
}

// The binary of init's main.go serves its metrics and probes at the ports
// its generated Deployment declares and probes, also when it runs without
// the Deployment's flags.
func TestInitBinaryServesWhatItsDeploymentProbes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		api      string
		webhooks bool
	}{{"", false}, {"example.com/v1/Widget", false}, {"example.com/v1/Widget", true}} {
		api := tt.api
		s := &scaffold{Name: "widget-operator", Module: "example.com/widgets", Webhooks: tt.webhooks}
		require.NoError(t, s.complete(api))
		tmpl, err := parseScaffold("main.go.tmpl")
		require.NoError(t, err)
		var b bytes.Buffer
		require.NoError(t, tmpl.Execute(&b, s))
		f, err := parser.ParseFile(token.NewFileSet(), "main.go", b.Bytes(), 0)
		require.NoError(t, err, b.String())
		defaults := map[string]string{}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if sel, ok := lit.Type.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Flags" {
				return true
			}
			for _, e := range lit.Elts {
				kv := e.(*ast.KeyValueExpr)
				if v, ok := kv.Value.(*ast.BasicLit); ok {
					defaults[kv.Key.(*ast.Ident).Name], _ = strconv.Unquote(v.Value)
				}
			}
			return false
		})

		d := deploymentManifest(deployment{name: s.Name, namespace: s.Namespace, image: s.Image})
		var dep appsv1.Deployment
		data, err := yaml.Marshal(d)
		require.NoError(t, err)
		require.NoError(t, yaml.UnmarshalStrict(data, &dep))
		c := dep.Spec.Template.Spec.Containers[0]
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		assert.Equal(t, fmt.Sprintf(":%d", ports["metrics"]), defaults["MetricsAddr"], "api %q: the metrics port", api)
		assert.Equal(t, "probes", c.LivenessProbe.HTTPGet.Port.String())
		assert.Equal(t, "probes", c.ReadinessProbe.HTTPGet.Port.String())
		assert.Equal(t, fmt.Sprintf(":%d", ports["probes"]), defaults["ProbeAddr"], "api %q: the probes port", api)
		assert.Contains(t, c.Args, "--metrics-bind-address="+defaults["MetricsAddr"])
		assert.Contains(t, c.Args, "--health-probe-bind-address="+defaults["ProbeAddr"])
	}
}

// consistentOutput is a run's output for an operator with webhooks whose
// manifests agree.
func consistentOutput(t *testing.T) webhookOutput {
	t.Helper()
	doc := func(s string) map[string]any {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(s), &m))
		return m
	}
	return webhookOutput{
		operator: "things-operator",
		service: doc(`{kind: Service, metadata: {name: things-webhook, namespace: things-system},
			spec: {selector: {app.kubernetes.io/name: things-operator}, ports: [{name: webhooks, port: 443, targetPort: webhooks}]}}`),
		configurations: []map[string]any{
			doc(`{kind: MutatingWebhookConfiguration, metadata: {name: things-operator},
				webhooks: [{name: m.example.com, clientConfig: {service: {name: things-webhook, namespace: things-system, path: /m}}}]}`),
			doc(`{kind: ValidatingWebhookConfiguration, metadata: {name: things-operator},
				webhooks: [{name: audit.example.com, clientConfig: {url: "https://audit.example.com"}},
				           {name: v.example.com, clientConfig: {service: {name: things-webhook, namespace: things-system, port: 443, path: /v}}}]}`),
		},
		conversions: []map[string]any{doc(`{kind: CustomResourceDefinition, metadata: {name: things.example.com},
			spec: {conversion: {webhook: {clientConfig: {service: {name: things-webhook, namespace: things-system, path: /convert}}}}}}`)},
		certHosts:  []string{"things-webhook.things-system.svc"},
		mutating:   []string{"things-operator"},
		validating: []string{"things-operator"},
		crdsCAs:    []string{"things.example.com"},
		deployment: doc(`{kind: Deployment, metadata: {name: things-operator, namespace: things-system},
			spec: {template: {metadata: {labels: {app.kubernetes.io/name: things-operator}},
				spec: {containers: [{name: operator, env: [{name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}],
					args: ["--webhook-cert-secret=$(POD_NAMESPACE)/things-webhook-certs", "--webhook-cert-hosts=things-webhook.$(POD_NAMESPACE).svc"],
					ports: [{name: webhooks, containerPort: 9443}]}]}}}}`),
	}
}

// checkWebhooks refuses each way the manifests of an operator's webhooks
// can disagree, naming the disagreement.
func TestCheckWebhooks(t *testing.T) {
	t.Parallel()
	require.NoError(t, checkWebhooks(consistentOutput(t)), "consistent manifests")
	set := func(v any, value any, keys ...string) {
		m := dig(v, keys[:len(keys)-1]...).(map[string]any)
		m[keys[len(keys)-1]] = value
	}
	webhook := func(o webhookOutput, c, w int) map[string]any {
		return o.configurations[c]["webhooks"].([]any)[w].(map[string]any)
	}
	tests := []struct {
		name    string
		change  func(o *webhookOutput)
		wantErr string
	}{
		{"a configuration calls a Service in another namespace", func(o *webhookOutput) {
			set(webhook(*o, 0, 0), "system", "clientConfig", "service", "namespace")
		}, "the webhook m.example.com of the MutatingWebhookConfiguration things-operator calls the Service system/things-webhook at port 443, but the webhook Service is things-system/things-webhook at port 443"},
		{"a configuration calls another Service", func(o *webhookOutput) {
			set(webhook(*o, 1, 1), "webhook-service", "clientConfig", "service", "name")
		}, "calls the Service things-system/webhook-service"},
		{"a configuration calls another port", func(o *webhookOutput) {
			set(webhook(*o, 1, 1), int64(8443), "clientConfig", "service", "port")
		}, "calls the Service things-system/things-webhook at port 8443"},
		{"a conversion calls another Service", func(o *webhookOutput) {
			set(o.conversions[0], "system", "spec", "conversion", "webhook", "clientConfig", "service", "namespace")
		}, "the conversion of the CRD things.example.com calls the Service system/things-webhook"},
		{"a webhook calls a Service without one generated", func(o *webhookOutput) {
			o.service = nil
			o.certHosts = nil
		}, "calls the Service things-system/things-webhook, which webhook.yaml does not have"},
		{"the certificate is for another host", func(o *webhookOutput) {
			o.certHosts = []string{"things-webhook.system.svc"}
		}, `the certificate's hosts ["things-webhook.system.svc"] do not include things-webhook.things-system.svc`},
		{"the Service is in another namespace than the Deployment", func(o *webhookOutput) {
			set(o.deployment, "other", "metadata", "namespace")
		}, "the webhook Service is in the namespace things-system, the operator's Deployment in other"},
		{"the Service selects other pods", func(o *webhookOutput) {
			set(o.service, map[string]any{"app.kubernetes.io/name": "other"}, "spec", "selector")
		}, "the webhook Service selects the pods labelled app.kubernetes.io/name=other"},
		{"the Service calls a port the pods do not have", func(o *webhookOutput) {
			set(o.service, []any{map[string]any{"port": int64(443), "targetPort": "https"}}, "spec", "ports")
		}, `the webhook Service calls the pods' port "https"`},
		{"the certificate's Secret is in another namespace", func(o *webhookOutput) {
			containers := dig(o.deployment, "spec", "template", "spec", "containers").([]any)
			containers[0].(map[string]any)["args"] = []any{"--webhook-cert-secret=system/things-webhook-certs"}
		}, "the certificate's Secret system/things-webhook-certs is not in the operator's namespace things-system"},
		{"the pod's namespace is not given to the container", func(o *webhookOutput) {
			containers := dig(o.deployment, "spec", "template", "spec", "containers").([]any)
			delete(containers[0].(map[string]any), "env")
		}, "the certificate's Secret $(POD_NAMESPACE)/things-webhook-certs is not in the operator's namespace things-system"},
		{"the Deployment issues the certificate for another host", func(o *webhookOutput) {
			containers := dig(o.deployment, "spec", "template", "spec", "containers").([]any)
			containers[0].(map[string]any)["args"] = []any{"--webhook-cert-secret=$(POD_NAMESPACE)/things-webhook-certs", "--webhook-cert-hosts=things-webhook.system.svc"}
		}, "the Deployment issues the certificate for things-webhook.system.svc, not for things-webhook.things-system.svc"},
		{"a configuration has controller-gen's placeholder name", func(o *webhookOutput) {
			set(o.configurations[1], placeholderValidating, "metadata", "name")
			o.validating = []string{placeholderValidating}
		}, `the ValidatingWebhookConfiguration is named "validating-webhook-configuration", a name the configurations of other operators have too`},
		{"the CA goes into a configuration not generated", func(o *webhookOutput) {
			o.configurations = o.configurations[1:]
		}, `the CA is published into the MutatingWebhookConfigurations ["things-operator"], but the generated ones with a webhook called at the Service are []`},
		{"the CA goes into a configuration of webhooks called at URLs only", func(o *webhookOutput) {
			set(webhook(*o, 0, 0), map[string]any{"url": "https://elsewhere.example.com"}, "clientConfig")
		}, `the CA is published into the MutatingWebhookConfigurations ["things-operator"], but the generated ones with a webhook called at the Service are []`},
		{"the CA misses a configuration generated", func(o *webhookOutput) {
			o.validating = nil
		}, `the CA is published into the ValidatingWebhookConfigurations [], but the generated ones with a webhook called at the Service are ["things-operator"]`},
		{"the CA goes into a CRD whose conversion is not generated", func(o *webhookOutput) {
			o.crdsCAs = append(o.crdsCAs, "others.example.com")
		}, `the CA is published into the CustomResourceDefinitions ["things.example.com" "others.example.com"], but the generated ones with a webhook called at the Service are ["things.example.com"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := consistentOutput(t)
			tt.change(&o)
			err := checkWebhooks(o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "the generated webhook manifests of things-operator disagree")
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// A run whose markers put the webhook Service in another namespace than
// -deploy-namespace is refused, and writes nothing.
func TestDeployRefusesAServiceElsewhere(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	elsewhere := strings.NewReplacer("admissionReviewVersions=v1", "admissionReviewVersions=v1,serviceNamespace=system",
		"path=/convert", "path=/convert,serviceNamespace=system").Replace(kubebuilderWebhooks)
	writeFiles(t, dir, map[string]string{"webhooks/webhooks.go": elsewhere})
	before, beforeDirs := tree(t, dir), dirs(t, dir)
	code, _, stderr := apigen(t, dir, kubebuilderDeployArgs...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "the webhook Service is in the namespace system, the operator's Deployment in things-system")
	assert.Equal(t, before, tree(t, dir), "nothing written")
	assert.Equal(t, beforeDirs, dirs(t, dir), "no directory left behind")
}

// init's -webhooks needs an API, whose kind its webhook validates; it
// writes nothing without one.
func TestInitWebhooksNeedAnAPI(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	before := tree(t, dir)
	code, _, stderr := apigen(t, dir, "init", "-name", "op", "-webhooks")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "-webhooks needs -api")
	assert.Equal(t, before, tree(t, dir), "nothing written")
}
