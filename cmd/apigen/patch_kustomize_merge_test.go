package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The user renames the pods' webhook port to https (a patch of the
// Deployment's container port that spells out protocol: TCP, as the
// Kubernetes docs' examples do) and points the Service at it. apigen's
// check, applying the patches with k8s.io strategicpatch (merge key
// containerPort), sees a container port https and a Service calling
// https: consistent, accepted. kubectl kustomize (kustomize v5.8.1) merges
// container and Service ports by [containerPort|port, protocol], finds no
// element {9443, TCP} in the generated port (no protocol) and drops the
// patch's port: it builds the Deployment with the port still named
// webhooks and the Service calling https, which the pods do not have, so
// the API server cannot reach the webhooks. The check must see what
// kustomize builds (and refuse it), not what strategicpatch makes.
func TestPatchedPortWithProtocolAsKustomizeBuildsIt(t *testing.T) {
	t.Parallel()
	kubectl := testKubectl(t)
	patches := map[string]string{
		"dep.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: things-operator, namespace: things-system}\nspec: {template: {spec: {containers: [{name: operator, ports: [{containerPort: 9443, protocol: TCP, name: https}]}]}}}\n",
		"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: things-webhook, namespace: things-system}\nspec: {ports: [{port: 443, targetPort: https}]}\n",
	}
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "patches"), 0o755))
	for name, content := range patches {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "patches", name), []byte(content), 0o644))
	}

	// What kubectl kustomize builds from the same objects and patches.
	o := consistentOutput(t)
	o.service["apiVersion"], o.deployment["apiVersion"] = "v1", "apps/v1"
	var res []string
	for _, doc := range []map[string]any{o.service, o.deployment} {
		data, err := yaml.Marshal(doc)
		require.NoError(t, err)
		res = append(res, string(data))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "res.yaml"), []byte(strings.Join(res, "---\n")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: [res.yaml]\npatches:\n- path: patches/dep.yaml\n- path: patches/svc.yaml\n"), 0o644))
	out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var built map[string]any
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
		if m["kind"] == "Deployment" {
			built = m
		}
	}
	builtPort := str(dig(built, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["ports"].([]any)[0], "name")

	o = consistentOutput(t)
	require.NoError(t, applyUserPatches(&o, filepath.Join(dir, "patches")))
	seenPort := str(dig(o.deployment, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["ports"].([]any)[0], "name")
	assert.Equal(t, builtPort, seenPort, "the check sees the pods' port named %q, kubectl kustomize builds it named %q", seenPort, builtPort)
	assert.Error(t, checkWebhooks(o), "kubectl kustomize builds a Service calling the pods' port https, which they do not have (their port is %q); the check accepted it", builtPort)
}

// kustomizeBuild returns the objects (by kind and name) that kubectl
// kustomize builds from the objects of o and the patch files of patches,
// listed in the kustomization as apigen's -deploy lists them: sorted, a
// JSON patch with the Deployment as its target.
func kustomizeBuild(t *testing.T, kubectl string, o webhookOutput, patches map[string]string) map[string]map[string]any {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "patches"), 0o755))
	for name, content := range patches {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "patches", name), []byte(content), 0o644))
	}
	var res []string
	for _, obj := range append([]map[string]any{o.service, o.deployment}, o.configurations...) {
		data, err := yaml.Marshal(obj)
		require.NoError(t, err)
		res = append(res, string(data))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "res.yaml"), []byte(strings.Join(res, "---\n")), 0o644))
	userPatches, err := readPatches(filepath.Join(dir, "patches"))
	require.NoError(t, err)
	var entries []any
	for _, p := range userPatches {
		entry := map[string]any{"path": "patches/" + p.name}
		if p.json {
			entry["target"] = map[string]any{"kind": "Deployment", "name": str(o.deployment, "metadata", "name"), "namespace": str(o.deployment, "metadata", "namespace")}
		}
		entries = append(entries, entry)
	}
	kustomization, err := yaml.Marshal(map[string]any{"resources": []any{"res.yaml"}, "patches": entries})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), kustomization, 0o644))
	out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
	require.NoError(t, err, "kubectl kustomize: %s", out)
	built := map[string]map[string]any{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
		built[str(m, "kind")+"/"+str(m, "metadata", "name")] = m
	}
	return built
}

// What the check sees of the objects after the user's patches is what
// kubectl kustomize (kyaml, which kubectl apply -k runs) builds from the
// same objects and patches, for each way a strategic-merge patch merges
// lists and maps: lists of ports keyed by port and protocol, lists keyed
// by name (env, volumes, containers, a configuration's webhooks), atomic
// lists (args), $patch directives on lists, list elements and maps, null
// clearing a field; and the check's verdict on both is the same.
func TestUserPatchesAsKustomizeBuildsThem(t *testing.T) {
	t.Parallel()
	kubectl := testKubectl(t)
	const (
		dep = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: things-operator, namespace: things-system}\n"
		svc = "apiVersion: v1\nkind: Service\nmetadata: {name: things-webhook, namespace: things-system}\n"
		vwc = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: things-operator}\n"
		mwc = "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: things-operator}\n"
		pod = "spec: {template: {spec: {containers: [{name: operator, "
	)
	tests := []struct {
		name    string
		patches map[string]string
	}{
		{"a container port with protocol TCP renamed", map[string]string{
			"dep.yaml": dep + pod + "ports: [{containerPort: 9443, protocol: TCP, name: https}]}]}}}\n",
			"svc.yaml": svc + "spec: {ports: [{port: 443, targetPort: https}]}\n"}},
		{"a container port without protocol renamed", map[string]string{
			"dep.yaml": dep + pod + "ports: [{containerPort: 9443, name: https}]}]}}}\n",
			"svc.yaml": svc + "spec: {ports: [{port: 443, targetPort: https}]}\n"}},
		{"a container port added", map[string]string{
			"dep.yaml": dep + pod + "ports: [{containerPort: 8443, name: https}]}]}}}\n",
			"svc.yaml": svc + "spec: {ports: [{port: 443, targetPort: https}]}\n"}},
		{"a Service port with protocol TCP", map[string]string{
			"svc.yaml": svc + "spec: {ports: [{port: 443, protocol: TCP, targetPort: 9443}]}\n"}},
		{"a Service port with protocol TCP at a port the pods lack", map[string]string{
			"svc.yaml": svc + "spec: {ports: [{port: 443, protocol: TCP, targetPort: 8443}]}\n"}},
		{"a Service port at a number", map[string]string{
			"svc.yaml": svc + "spec: {ports: [{port: 443, targetPort: 8443}]}\n"}},
		{"a Service port added", map[string]string{
			"svc.yaml": svc + "spec: {ports: [{name: metrics, port: 8080, targetPort: metrics}]}\n"}},
		{"a Service port renamed and a container port renamed in one file each", map[string]string{
			"a-dep.yaml": dep + pod + "ports: [{containerPort: 9443, name: tls}]}]}}}\n",
			"b-svc.yaml": svc + "spec: {ports: [{port: 443, name: tls, targetPort: tls}]}\n"}},
		{"a container port deleted", map[string]string{
			"dep.yaml": dep + pod + "ports: [{containerPort: 9443, $patch: delete}]}]}}}\n"}},
		{"container ports replaced", map[string]string{
			"dep.yaml": dep + pod + "ports: [{containerPort: 8443, name: https}, {$patch: replace}]}]}}}\n"}},
		{"container ports cleared with null", map[string]string{
			"dep.yaml": dep + pod + "ports: null}]}}}\n"}},
		{"an env var added and one changed", map[string]string{
			"dep.yaml": dep + pod + "env: [{name: LOG_LEVEL, value: debug}, {name: POD_NAMESPACE, value: other}]}]}}}\n"}},
		{"an env var deleted", map[string]string{
			"dep.yaml": dep + pod + "env: [{name: POD_NAMESPACE, $patch: delete}]}]}}}\n"}},
		{"the args replaced (an atomic list)", map[string]string{
			"dep.yaml": dep + pod + "args: [--webhook-cert-secret=other/things-webhook-certs]}]}}}\n"}},
		{"a volume and its mount added", map[string]string{
			"dep.yaml": dep + "spec: {template: {spec: {volumes: [{name: cache, emptyDir: {}}], containers: [{name: operator, volumeMounts: [{name: cache, mountPath: /cache}]}]}}}\n"}},
		{"a sidecar container added", map[string]string{
			"dep.yaml": dep + "spec: {template: {spec: {containers: [{name: proxy, image: proxy:1, ports: [{containerPort: 8443, name: https}]}]}}}\n",
			"svc.yaml": svc + "spec: {ports: [{port: 443, targetPort: https}]}\n"}},
		{"the containers replaced", map[string]string{
			"dep.yaml": dep + "spec: {template: {spec: {containers: [{name: proxy, image: proxy:1, ports: [{containerPort: 9443, name: webhooks}]}, {$patch: replace}]}}}\n"}},
		{"the operator container deleted", map[string]string{
			"dep.yaml": dep + "spec: {template: {spec: {containers: [{name: operator, $patch: delete}]}}}\n"}},
		{"a webhook's port changed", map[string]string{
			"v.yaml": vwc + "webhooks: [{name: v.example.com, clientConfig: {service: {port: 8443}}}]\n"}},
		{"a webhook added and one deleted", map[string]string{
			"v.yaml": vwc + "webhooks: [{name: audit.example.com, $patch: delete}, {name: w.example.com, clientConfig: {service: {name: things-webhook, namespace: things-system, path: /w}}}]\n",
			"m.yaml": mwc + "webhooks: [{name: m.example.com, failurePolicy: Ignore}]\n"}},
		{"the webhooks replaced", map[string]string{
			"m.yaml": mwc + "webhooks: [{name: n.example.com, clientConfig: {service: {name: other, namespace: things-system}}}, {$patch: replace}]\n"}},
		{"a Service selector label changed", map[string]string{
			"svc.yaml": svc + "spec: {selector: {app.kubernetes.io/name: other}}\n"}},
		{"a Service selector label added", map[string]string{
			"svc.yaml": svc + "spec: {selector: {app.kubernetes.io/component: webhooks}}\n"}},
		{"a Service selector replaced", map[string]string{
			"svc.yaml": svc + "spec: {selector: {$patch: replace, app: things}}\n"}},
		{"a Service selector label removed with null", map[string]string{
			"svc.yaml": svc + "spec: {selector: {app.kubernetes.io/name: null}}\n"}},
		{"the pod labels and the selector changed together", map[string]string{
			"dep.yaml": dep + "spec: {template: {metadata: {labels: {tier: webhooks}}}}\n",
			"svc.yaml": svc + "spec: {selector: {tier: webhooks}}\n"}},
		{"a strategic-merge patch and a JSON patch of the Deployment", map[string]string{
			"a-dep.yaml":  dep + pod + "ports: [{containerPort: 9443, name: https}]}]}}}\n",
			"b-json.yaml": "- op: replace\n  path: /spec/template/spec/containers/0/ports/0/name\n  value: tls\n",
			"svc.yaml":    svc + "spec: {ports: [{port: 443, targetPort: tls}]}\n"}},
		{"two documents in one file", map[string]string{
			"both.yaml": dep + pod + "ports: [{containerPort: 9443, protocol: TCP, name: https}]}]}}}\n---\n" + svc + "spec: {ports: [{port: 443, protocol: TCP, targetPort: https}]}\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The objects as apigen writes them, with their apiVersions.
			o := consistentOutput(t)
			for _, obj := range append([]map[string]any{o.service, o.deployment}, o.configurations...) {
				obj["apiVersion"] = generatedAPIVersions[str(obj, "kind")]
			}
			built := kustomizeBuild(t, kubectl, o, tt.patches)

			dir := t.TempDir()
			for name, content := range tt.patches {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
			}
			seen := o
			seen.configurations = slices.Clone(o.configurations)
			require.NoError(t, applyUserPatches(&seen, dir))
			assert.Equal(t, built["Service/things-webhook"], seen.service, "the webhook Service")
			assert.Equal(t, built["Deployment/things-operator"], seen.deployment, "the Deployment")
			for _, c := range seen.configurations {
				assert.Equal(t, built[str(c, "kind")+"/things-operator"], c, "the %s", str(c, "kind"))
			}

			// The check's verdict on what it sees is its verdict on
			// what kustomize builds.
			fromBuild := o
			fromBuild.service, fromBuild.deployment = built["Service/things-webhook"], built["Deployment/things-operator"]
			fromBuild.configurations = nil
			for _, c := range o.configurations {
				fromBuild.configurations = append(fromBuild.configurations, built[str(c, "kind")+"/things-operator"])
			}
			want, got := checkWebhooks(fromBuild), checkWebhooks(seen)
			if want == nil {
				assert.NoError(t, got, "kubectl kustomize builds manifests that agree")
			} else {
				assert.EqualError(t, got, want.Error())
			}
		})
	}
}
