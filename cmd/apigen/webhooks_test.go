package main

import (
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
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// thingWebhooks is an operator package with the markers of a mutating,
// a validating and a conversion webhook, behind one Service.
const thingWebhooks = `package webhooks

// +kubebuilder:webhookconfiguration:mutating=true,name=things-operator
// +kubebuilder:webhook:mutating=true,path=/default-thing,name=default.things.example.com,groups=example.com,versions=v1,resources=things,verbs=create;update,failurePolicy=fail,sideEffects=None,admissionReviewVersions=v1,serviceName=things-webhook,serviceNamespace=things-system,servicePort=8443
// +kubebuilder:webhook:mutating=false,path=/validate-thing,name=validate.things.example.com,groups=example.com,versions=v1,resources=things,verbs=create;update;delete,failurePolicy=ignore,sideEffects=None,admissionReviewVersions=v1,serviceName=things-webhook,serviceNamespace=things-system,servicePort=8443
// +kubebuilder:webhook:mutating=false,url="https://audit.example.com/check",name=audit.things.example.com,groups=example.com,versions=v1,resources=things,verbs=create,failurePolicy=ignore,sideEffects=None,admissionReviewVersions=v1
// +ctrlkit:conversionwebhook:crd=things.example.com,path=/convert,serviceName=things-webhook,serviceNamespace=things-system,servicePort=8443

// Serve serves them.
func Serve() {}
`

// webhookArgs generate the webhooks of ./webhooks into deploy, alone.
var webhookArgs = []string{"-out", "", "-crd", "", "-webhook", "deploy", "-webhook-paths", "./webhooks/...", "-rbac-role", "things-operator"}

// withWebhooks is the fixture with thingWebhooks and the user's own files
// in the directories apigen writes to.
func withWebhooks(t *testing.T) (dir string, user map[string]string) {
	t.Helper()
	dir = fixture(t)
	user = map[string]string{
		"deploy/kustomization.yaml":  "resources:\n  - webhook.yaml\npatches:\n  - path: crd-conversion.yaml\n  - path: replicas.yaml\n",
		"deploy/replicas.yaml":       "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: things-operator\nspec:\n  replicas: 3\n",
		"deploy/webhook-extra.yaml":  "# the user's\n",
		"webhooks/serve_test.go":     "package webhooks\n",
		"webhooks/inner/README.md":   "not a package\n",
		"webhooks/zz_generated.x.go": "package webhooks\n",
	}
	user["webhooks/webhooks.go"] = thingWebhooks
	for rel, content := range user {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir, user
}

// webhookConsts reads the string constants of a generated Go file.
func webhookConsts(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			value, err := strconv.Unquote(v.Values[0].(*ast.BasicLit).Value)
			require.NoError(t, err)
			out[v.Names[0].Name] = value
		}
	}
	return out
}

// The markers make the Service, the configurations, the CRD's conversion
// and the names the operator's code uses; the user's files beside them
// stay; -verify sees a changed marker; a run after it replaces what it
// generated and nothing else.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	dir, user := withWebhooks(t)
	code, stdout, stderr := apigen(t, dir, webhookArgs...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	files := tree(t, dir)
	for rel, content := range user {
		assert.Equal(t, content, files[rel], "the user's %s", rel)
	}

	docs := strings.Split(files["deploy/webhook.yaml"], "\n---\n")
	require.Len(t, docs, 3, files["deploy/webhook.yaml"])
	assert.True(t, strings.HasPrefix(docs[0], yamlMarker), "marked as apigen's")
	var svc struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
		Spec     struct {
			Selector map[string]string
			Ports    []struct {
				Port       int32
				TargetPort string `json:"targetPort"`
			}
			PublishNotReadyAddresses bool `json:"publishNotReadyAddresses"`
		}
	}
	require.NoError(t, yaml.Unmarshal([]byte(docs[0]), &svc))
	assert.Equal(t, "Service", svc.Kind)
	assert.Equal(t, "things-webhook", svc.Metadata.Name)
	assert.Equal(t, "things-system", svc.Metadata.Namespace)
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "things-operator"}, svc.Spec.Selector)
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, int32(8443), svc.Spec.Ports[0].Port)
	assert.Equal(t, "webhooks", svc.Spec.Ports[0].TargetPort)
	assert.True(t, svc.Spec.PublishNotReadyAddresses)

	var mutating admissionregistrationv1.MutatingWebhookConfiguration
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &mutating))
	assert.Equal(t, "things-operator", mutating.Name)
	require.Len(t, mutating.Webhooks, 1)
	assert.Equal(t, "/default-thing", *mutating.Webhooks[0].ClientConfig.Service.Path)
	assert.Equal(t, "things-webhook", mutating.Webhooks[0].ClientConfig.Service.Name)
	assert.Equal(t, int32(8443), *mutating.Webhooks[0].ClientConfig.Service.Port)

	var validating admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[2]), &validating))
	assert.Equal(t, "things-operator", validating.Name, "the operator's name, without a webhookconfiguration marker")
	require.Len(t, validating.Webhooks, 2)
	assert.Equal(t, "https://audit.example.com/check", *validating.Webhooks[0].ClientConfig.URL)
	assert.Equal(t, "/validate-thing", *validating.Webhooks[1].ClientConfig.Service.Path)
	assert.Equal(t, admissionregistrationv1.Ignore, *validating.Webhooks[1].FailurePolicy)

	conversion := files["deploy/crd-conversion.yaml"]
	assert.True(t, strings.HasPrefix(conversion, yamlMarker), "marked as apigen's")
	var crd struct {
		Metadata struct{ Name string }
		Spec     struct {
			Conversion struct {
				Strategy string
				Webhook  struct {
					ClientConfig struct {
						Service struct {
							Name, Namespace, Path string
							Port                  int32
						}
					} `json:"clientConfig"`
					ConversionReviewVersions []string `json:"conversionReviewVersions"`
				}
			}
		}
	}
	require.NoError(t, yaml.Unmarshal([]byte(conversion), &crd))
	assert.Equal(t, "things.example.com", crd.Metadata.Name)
	assert.Equal(t, "Webhook", crd.Spec.Conversion.Strategy)
	assert.Equal(t, "/convert", crd.Spec.Conversion.Webhook.ClientConfig.Service.Path)
	assert.Equal(t, "things-system", crd.Spec.Conversion.Webhook.ClientConfig.Service.Namespace)
	assert.Equal(t, int32(8443), crd.Spec.Conversion.Webhook.ClientConfig.Service.Port)
	assert.Equal(t, []string{"v1"}, crd.Spec.Conversion.Webhook.ConversionReviewVersions)

	goFile := files["webhooks/zz_generated.webhooks.go"]
	assert.True(t, generatedGo([]byte(goFile)), "marked as generated")
	assert.Equal(t, map[string]string{
		"webhookPathConvert": "/convert", "webhookPathDefaultThing": "/default-thing", "webhookPathValidateThing": "/validate-thing",
	}, webhookConsts(t, filepath.Join(dir, "webhooks/zz_generated.webhooks.go")))
	assert.Contains(t, goFile, `var webhookCertHosts = []string{"things-webhook.things-system.svc"}`)
	assert.Contains(t, goFile, `MutatingWebhookConfigurations:   []string{"things-operator"}`)
	assert.Contains(t, goFile, `ValidatingWebhookConfigurations: []string{"things-operator"}`)
	assert.Contains(t, goFile, `CRDs:                            []string{"things.example.com"}`)

	code, stdout, stderr = apigen(t, dir, append([]string{"-verify"}, webhookArgs...)...)
	assert.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)

	// A changed path and no conversion any more: the Go file and webhook.yaml
	// are stale, crd-conversion.yaml is to be removed.
	changed := strings.ReplaceAll(thingWebhooks, "/default-thing", "/mutate-thing")
	changed = strings.Replace(changed, "// +ctrlkit:conversionwebhook", "// no longer +ctrlkit", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "webhooks/webhooks.go"), []byte(changed), 0o644))
	before := tree(t, dir)
	code, _, stderr = apigen(t, dir, append([]string{"-verify"}, webhookArgs...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "changed: deploy/webhook.yaml")
	assert.Contains(t, stderr, "removed: deploy/crd-conversion.yaml")
	assert.Contains(t, stderr, "changed: webhooks/zz_generated.webhooks.go")
	assert.Equal(t, before, tree(t, dir), "-verify writes nothing")

	code, stdout, stderr = apigen(t, dir, webhookArgs...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	after := tree(t, dir)
	assert.NotContains(t, after, "deploy/crd-conversion.yaml")
	assert.Contains(t, after["deploy/webhook.yaml"], "path: /mutate-thing")
	assert.Equal(t, map[string]string{"webhookPathMutateThing": "/mutate-thing", "webhookPathValidateThing": "/validate-thing"},
		webhookConsts(t, filepath.Join(dir, "webhooks/zz_generated.webhooks.go")))
	assert.Contains(t, after["webhooks/zz_generated.webhooks.go"], "CRDs:                            nil")
	for rel, content := range user {
		if rel != "webhooks/webhooks.go" {
			assert.Equal(t, content, after[rel], "the user's %s", rel)
		}
	}
}

// Markers apigen cannot make one operator's webhooks of are refused, and
// nothing is written.
func TestWebhookRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		files   map[string]string
		args    []string
		wantErr string
	}{
		{
			name:    "markers in two packages",
			files:   map[string]string{"webhooks/more/more.go": "// +ctrlkit:conversionwebhook:crd=others.example.com,path=/convert-others,serviceName=things-webhook,serviceNamespace=things-system,servicePort=8443\npackage more\n"},
			wantErr: "webhook markers in 2 packages",
		},
		{
			name:    "two Services",
			files:   map[string]string{"webhooks/other.go": "package webhooks\n\n// +ctrlkit:conversionwebhook:crd=others.example.com,path=/convert-others,serviceName=other,serviceNamespace=things-system\n"},
			wantErr: "the webhook markers name two Services",
		},
		{
			name:    "two paths, one Go name",
			files:   map[string]string{"webhooks/other.go": "package webhooks\n\n// +ctrlkit:conversionwebhook:crd=others.example.com,path=/default_thing,serviceName=things-webhook,serviceNamespace=things-system,servicePort=8443\n"},
			wantErr: "make the same Go name webhookPathDefaultThing",
		},
		{
			name:    "no markers",
			args:    []string{"-webhook-paths", "./apis/..."},
			wantErr: "no +kubebuilder:webhook or +ctrlkit:conversionwebhook marker",
		},
		{
			name:    "a pattern outside the module",
			args:    []string{"-webhook-paths", "k8s.io/api/..."},
			wantErr: "-webhook-paths: \"k8s.io/api/...\" is neither a directory of the module",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, _ := withWebhooks(t)
			for rel, content := range tt.files {
				p := filepath.Join(dir, rel)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
			}
			before, beforeDirs := tree(t, dir), dirs(t, dir)
			code, _, stderr := apigen(t, dir, append(webhookArgs, tt.args...)...)
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr, tt.wantErr)
			assert.Equal(t, before, tree(t, dir), "nothing written")
			assert.Equal(t, beforeDirs, dirs(t, dir), "no directory left behind")
		})
	}
}

// deployArgs generate the roles, the webhooks and the deploy manifests of
// ./webhooks into deploy.
var deployArgs = []string{"-out", "", "-crd", "", "-rbac", "deploy", "-rbac-role", "things-operator", "-rbac-paths", "./webhooks/...",
	"-webhook", "deploy", "-webhook-paths", "./webhooks/...",
	"-deploy", "deploy", "-deploy-namespace", "things-system", "-deploy-image", "example.com/things:v1"}

// The deploy manifests bind the roles, run the image with the webhooks'
// certificate in the Service's Secret, and list every manifest and the
// user's patches, whose files stay as they are; a new patch makes the
// kustomization stale.
func TestDeploy(t *testing.T) {
	t.Parallel()
	dir, user := withWebhooks(t)
	rbacMarkers := "package webhooks\n\n// +kubebuilder:rbac:groups=example.com,resources=things,verbs=get;list;watch\n// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=things-system,resources=leases,verbs=get;create;update\n"
	mine := map[string]string{
		"webhooks/rbac.go":              rbacMarkers,
		"deploy/patches/replicas.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: things-operator\n  namespace: things-system\nspec:\n  replicas: 2\n",
		"deploy/patches/args.yaml":      "- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --things-url=http://things\n",
		"deploy/patches/notes.txt":      "not a patch\n",
		"deploy/README.md":              "# deploy\n",
		"deploy/kustomization.yaml.bak": "kept\n",
	}
	delete(user, "deploy/kustomization.yaml") // the user's kustomization would collide: apigen writes it
	require.NoError(t, os.Remove(filepath.Join(dir, "deploy/kustomization.yaml")))
	for rel, content := range mine {
		user[rel] = content
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	code, stdout, stderr := apigen(t, dir, deployArgs...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	files := tree(t, dir)
	for rel, content := range user {
		assert.Equal(t, content, files[rel], "the user's %s", rel)
	}
	for _, f := range []string{"kustomization.yaml", "namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "deployment.yaml"} {
		assert.True(t, strings.HasPrefix(files["deploy/"+f], yamlMarker), "%s is marked as apigen's", f)
	}

	var k struct {
		Resources []string
		Patches   []struct {
			Path   string
			Target map[string]string
		}
	}
	require.NoError(t, yaml.Unmarshal([]byte(files["deploy/kustomization.yaml"]), &k))
	assert.Equal(t, []string{"namespace.yaml", "serviceaccount.yaml", "role.yaml", "rbac.yaml", "deployment.yaml", "webhook.yaml"}, k.Resources)
	// The conversion's CRD is not among the resources: kustomize would
	// fail to find the object of its patch.
	require.Len(t, k.Patches, 2)
	assert.Equal(t, "patches/args.yaml", k.Patches[0].Path)
	assert.Equal(t, map[string]string{"kind": "Deployment", "name": "things-operator", "namespace": "things-system"}, k.Patches[0].Target, "a JSON patch targets the Deployment")
	assert.Equal(t, "patches/replicas.yaml", k.Patches[1].Path)
	assert.Nil(t, k.Patches[1].Target, "a strategic-merge patch names its object")

	var d appsv1.Deployment
	require.NoError(t, yaml.UnmarshalStrict([]byte(files["deploy/deployment.yaml"]), &d))
	assert.Equal(t, "things-system", d.Namespace)
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "things-operator"}, d.Spec.Template.Labels, "the labels the webhook Service selects")
	assert.Equal(t, "things-operator", d.Spec.Template.Spec.ServiceAccountName)
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	c := d.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "example.com/things:v1", c.Image)
	assert.Equal(t, []string{"--leader-elect", "--leader-elect-namespace=$(POD_NAMESPACE)", "--metrics-bind-address=:8080",
		"--health-probe-bind-address=:8081", "--webhook-bind-address=:9443", "--webhook-cert-secret=$(POD_NAMESPACE)/things-webhook-certs",
		"--webhook-cert-hosts=things-webhook.$(POD_NAMESPACE).svc"}, c.Args, "the namespace the pod runs in, which the kubelet expands")
	require.Len(t, c.Env, 1)
	assert.Equal(t, "POD_NAMESPACE", c.Env[0].Name)
	require.NotNil(t, c.Env[0].ValueFrom)
	require.NotNil(t, c.Env[0].ValueFrom.FieldRef)
	assert.Equal(t, "metadata.namespace", c.Env[0].ValueFrom.FieldRef.FieldPath, "the pod's namespace, from the downward API")
	var portNames []string
	for _, p := range c.Ports {
		portNames = append(portNames, p.Name)
	}
	assert.Equal(t, []string{"metrics", "probes", "webhooks"}, portNames)

	bindings := strings.Split(files["deploy/rbac.yaml"], "\n---\n")
	// The bindings of role.yaml's roles, then the roles of what the
	// Deployment makes the operator do and their bindings (see
	// TestDeployGrantsWhatTheDeploymentDoes).
	require.Len(t, bindings, 6, files["deploy/rbac.yaml"])
	var cluster, ns rbacv1.RoleBinding
	require.NoError(t, yaml.Unmarshal([]byte(bindings[0]), &cluster))
	require.NoError(t, yaml.Unmarshal([]byte(bindings[1]), &ns))
	assert.Equal(t, "ClusterRoleBinding", cluster.Kind)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "things-operator"}, cluster.RoleRef)
	assert.Equal(t, "things-system", ns.Namespace)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "things-operator"}, ns.RoleRef)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "things-operator", Namespace: "things-system"}}, ns.Subjects)

	code, stdout, stderr = apigen(t, dir, append([]string{"-verify"}, deployArgs...)...)
	assert.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy/patches/resources.yaml"), []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: things-operator\n  namespace: things-system\n"), 0o644))
	code, _, stderr = apigen(t, dir, append([]string{"-verify"}, deployArgs...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "changed: deploy/kustomization.yaml", "a new patch is not listed yet")

	t.Run("refusals", func(t *testing.T) {
		for _, tt := range []struct {
			name     string
			args     []string
			patch    string
			wantCode int
			wantErr  string
		}{
			{name: "without roles", args: []string{"-out", "", "-crd", "", "-rbac-role", "x", "-deploy", "deploy", "-deploy-namespace", "n", "-deploy-image", "i"}, wantCode: 2, wantErr: "-deploy needs -rbac"},
			{name: "a patch that is neither an object nor operations", args: deployArgs, patch: "just a string\n", wantCode: 1, wantErr: "is neither objects, one a document (strategic-merge patches), nor one list of operations"},
			{name: "roles outside the deploy directory", args: append(slices.Clone(deployArgs), "-rbac", "config/rbac"), wantCode: 1, wantErr: "config/rbac/role.yaml is outside deploy"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				if tt.patch != "" {
					require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy/patches/bad.yaml"), []byte(tt.patch), 0o644))
					defer os.Remove(filepath.Join(dir, "deploy/patches/bad.yaml"))
				}
				before := tree(t, dir)
				code, _, stderr := apigen(t, dir, tt.args...)
				assert.Equal(t, tt.wantCode, code)
				assert.Contains(t, stderr, tt.wantErr)
				assert.Equal(t, before, tree(t, dir), "nothing written")
			})
		}
	})
}

// CRDs generated outside the deploy directory are listed as a directory
// if it is a kustomization, and refused otherwise: kustomize loads no
// file outside the kustomization's directory.
func TestDeployCRDsOutside(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	st := &stage{dir: t.TempDir()}
	st.tree = filepath.Join(st.dir, "tree")
	role := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: op\nrules: []\n"
	require.NoError(t, os.MkdirAll(st.path("deploy"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(st.path("deploy"), "role.yaml"), []byte(role), 0o644))
	d := deployment{name: "op", namespace: "op-system", image: "op:v1", dir: "deploy", crdDir: "api/crd", rbacDir: "deploy"}

	err := generateDeploy(root, st, d)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "give api/crd a kustomization.yaml")

	require.NoError(t, os.MkdirAll(filepath.Join(root, "api/crd"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "api/crd/kustomization.yaml"), []byte("resources: []\n"), 0o644))
	require.NoError(t, generateDeploy(root, st, d))
	data, err := os.ReadFile(filepath.Join(st.path("deploy"), "kustomization.yaml"))
	require.NoError(t, err)
	var k struct{ Resources []string }
	require.NoError(t, yaml.Unmarshal(data, &k))
	assert.Equal(t, []string{"../api/crd", "namespace.yaml", "serviceaccount.yaml", "role.yaml", "rbac.yaml", "deployment.yaml"}, k.Resources)
}

// Webhooks called only at a URL need no Service and serve no path: the
// configuration is generated alone, and the Go file names no path and no
// host.
func TestWebhooksCalledAtURLs(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "webhooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "webhooks/webhooks.go"), []byte(`package webhooks

// +kubebuilder:webhook:mutating=false,url="https://audit.example.com/check",name=audit.things.example.com,groups=example.com,versions=v1,resources=things,verbs=create,failurePolicy=ignore,sideEffects=None,admissionReviewVersions=v1
`), 0o644))
	code, stdout, stderr := apigen(t, dir, webhookArgs...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	files := tree(t, dir)
	docs := strings.Split(files["deploy/webhook.yaml"], "\n---\n")
	require.Len(t, docs, 2, files["deploy/webhook.yaml"])
	assert.NotContains(t, docs[0], "kind: Service")
	assert.Contains(t, docs[1], "kind: ValidatingWebhookConfiguration")
	assert.Contains(t, docs[1], "url: https://audit.example.com/check")
	assert.NotContains(t, files, "deploy/crd-conversion.yaml")
	assert.Empty(t, webhookConsts(t, filepath.Join(dir, "webhooks/zz_generated.webhooks.go")))
	assert.Contains(t, files["webhooks/zz_generated.webhooks.go"], "var webhookCertHosts []string\n")
	assert.Contains(t, files["webhooks/zz_generated.webhooks.go"], "ValidatingWebhookConfigurations: nil,", "no CA of the operator goes into webhooks called at URLs")
}
