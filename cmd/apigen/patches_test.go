package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The check sees the objects as the user's patches leave them, as
// kustomize applies them: a strategic-merge patch to the object it names,
// a JSON patch to the Deployment; and refuses what they make disagree.
func TestCheckWebhooksWithUserPatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		patches map[string]string
		wantErr string // "" if the patched manifests agree
	}{
		{"no patches", nil, ""},
		{"the Deployment's replicas", map[string]string{"replicas.yaml": "kind: Deployment\napiVersion: apps/v1\nmetadata: {name: things-operator, namespace: things-system}\nspec: {replicas: 2}\n"}, ""},
		{"a patch of an object of another namespace", map[string]string{"svc.yaml": "kind: Service\napiVersion: v1\nmetadata: {name: things-webhook, namespace: other}\nspec: {ports: [{port: 443, targetPort: 8443}]}\n"}, ""},
		{"a patch without a namespace, of the default namespace", map[string]string{"svc.yaml": "kind: Service\napiVersion: v1\nmetadata: {name: things-webhook}\nspec: {ports: [{port: 443, targetPort: 8443}]}\n"}, ""},
		{"the Service at a port number the pods do not have", map[string]string{"svc.yaml": "kind: Service\napiVersion: v1\nmetadata: {name: things-webhook, namespace: things-system}\nspec: {ports: [{port: 443, targetPort: 8443}]}\n"},
			"the webhook Service calls the pods' port 8443, which the Deployment's containers do not have"},
		{"the Service at the pods' port number", map[string]string{"svc.yaml": "kind: Service\napiVersion: v1\nmetadata: {name: things-webhook, namespace: things-system}\nspec: {ports: [{port: 443, targetPort: 9443}]}\n"}, ""},
		{"the Service selecting other pods", map[string]string{"svc.yaml": "kind: Service\napiVersion: v1\nmetadata: {name: things-webhook, namespace: things-system}\nspec: {selector: {app.kubernetes.io/name: other}}\n"},
			"the webhook Service selects the pods labelled app.kubernetes.io/name=other"},
		{"a configuration's webhook calling another port", map[string]string{"v.yaml": "kind: ValidatingWebhookConfiguration\napiVersion: admissionregistration.k8s.io/v1\nmetadata: {name: things-operator}\nwebhooks: [{name: v.example.com, clientConfig: {service: {name: things-webhook, namespace: things-system, port: 8443}}}]\n"},
			"calls the Service things-system/things-webhook at port 8443"},
		{"a JSON patch renaming the pods' port", map[string]string{"port.yaml": "- op: replace\n  path: /spec/template/spec/containers/0/ports/0/name\n  value: https\n"},
			`the webhook Service calls the pods' port "webhooks"`},
		{"a JSON patch moving the Secret", map[string]string{"args.yaml": "- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --webhook-cert-secret=other/things-webhook-certs\n"},
			"the certificate's Secret other/things-webhook-certs is not in the operator's namespace things-system"},
		{"a JSON patch removing the pod's namespace", map[string]string{"env.yaml": "- op: remove\n  path: /spec/template/spec/containers/0/env/0\n"},
			"the certificate's Secret $(POD_NAMESPACE)/things-webhook-certs is not in the operator's namespace things-system"},
		{"a JSON patch adding a flag", map[string]string{"flag.yaml": "- op: add\n  path: /spec/template/spec/containers/0/args/0\n  value: --store-url=s3://x\n- {op: copy, from: /spec/template/spec/containers/0/args/1, path: /spec/template/spec/containers/0/args/-}\n- {op: test, path: /spec/replicas, value: 1}\n"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, content := range tt.patches {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
			}
			o := consistentOutput(t)
			err := applyUserPatches(&o, dir)
			if err == nil {
				err = checkWebhooks(o)
			}
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// applyJSONPatch applies each operation of RFC 6902 as kustomize does,
// and fails on a path that is not there.
func TestApplyJSONPatch(t *testing.T) {
	t.Parallel()
	doc := func(s string) map[string]any {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(s), &m))
		return m
	}
	tests := []struct {
		name, ops, want, wantErr string
	}{
		{"add a member", `[{op: add, path: /b, value: 2}]`, `{a: [1, 2], b: 2}`, ""},
		{"append", `[{op: add, path: /a/-, value: 3}]`, `{a: [1, 2, 3]}`, ""},
		{"insert", `[{op: add, path: /a/0, value: 0}]`, `{a: [0, 1, 2]}`, ""},
		{"replace an element", `[{op: replace, path: /a/1, value: 5}]`, `{a: [1, 5]}`, ""},
		{"remove an element", `[{op: remove, path: /a/0}]`, `{a: [2]}`, ""},
		{"move", `[{op: move, from: /a/0, path: /c}]`, `{a: [2], c: 1}`, ""},
		{"copy", `[{op: copy, from: /a, path: /c}]`, `{a: [1, 2], c: [1, 2]}`, ""},
		{"escaped member", `[{op: add, path: /x~1y~0z, value: 1}]`, `{a: [1, 2], x/y~z: 1}`, ""},
		{"replace a missing element", `[{op: replace, path: /a/2, value: 5}]`, "", "no element"},
		{"remove a missing member", `[{op: remove, path: /b}]`, "", "no member"},
		{"unknown operation", `[{op: merge, path: /a}]`, "", "unknown operation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ops []map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(tt.ops), &ops))
			got, err := applyJSONPatch(doc(`{a: [1, 2]}`), ops)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, doc(tt.want), got)
		})
	}
}

// A patch file is one JSON patch (a list of operations) or one or more
// strategic-merge patches, one a document; anything else is refused.
func TestReadPatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		data        string
		wantJSON    bool
		wantObjects int
		wantErr     string
	}{
		{name: "one object", data: "kind: Service\n", wantObjects: 1},
		{name: "objects in several documents", data: "kind: Deployment\n---\nkind: Service\n---\n", wantObjects: 2},
		{name: "a JSON patch", data: "- op: add\n  path: /spec/replicas\n  value: 2\n", wantJSON: true},
		{name: "a JSON patch and an object", data: "- op: add\n  path: /a\n  value: 2\n---\nkind: Service\n", wantErr: "is neither objects"},
		{name: "an empty file", data: "", wantErr: "is empty"},
		{name: "a scalar", data: "text\n", wantErr: "is neither objects"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := readPatch("p.yaml", []byte(tt.data))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantJSON, p.json)
			assert.Len(t, p.objects, tt.wantObjects)
		})
	}
}
