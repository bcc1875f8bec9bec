package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

// kustomizationFile is the file kubectl apply -k reads in a directory.
const kustomizationFile = "kustomization.yaml"

// TestDeployKustomizations installs each example operator the way its
// README says, kubectl apply -k examples/NAME/deploy, on an API server.
// The kustomization lists every manifest of its directory (a new file
// that is not listed fails the test), kustomize renders each object of
// those manifests exactly once, the API server accepts them all, and
// applying again changes nothing (a server-side dry run). The
// Deployments name the images that make image builds. The API server
// runs no controllers, so nothing starts.
func TestDeployKustomizations(t *testing.T) {
	t.Parallel()
	root, err := repo.Root()
	require.NoError(t, err)
	cp := controlplane.StartT(t, controlplane.Options{Size: controlplane.APIServerOnly})
	examples := []struct {
		name  string
		image string // of the operator's Deployment, as make image names it
	}{
		{name: "foo", image: "ctrlkit/foo-controller:dev"},
		{name: "bucket", image: "ctrlkit/bucket:dev"},
		{name: "external", image: "ctrlkit/external:dev"},
		{name: "fleet", image: "ctrlkit/fleet:dev"},
		{name: "configset", image: "ctrlkit/configset:dev"},
	}
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			dir := filepath.Join(root, "examples", ex.name, "deploy")
			want := kustomizationObjects(t, dir)
			kubectl := func(args ...string) string {
				t.Helper()
				var stdout, stderr bytes.Buffer
				cmd := cp.KubectlCommand(t.Context(), args...)
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				require.NoError(t, cmd.Run(), "kubectl %s:\n%s", strings.Join(args, " "), stderr.String())
				return stdout.String()
			}

			rendered := decodeObjects(t, "kubectl kustomize "+dir, []byte(kubectl("kustomize", dir)))
			assert.ElementsMatch(t, objectNames(want), objectNames(rendered), "every object of the manifests, once")
			merges, jsonPatches := kustomizationPatches(t, dir)
			for name, ops := range jsonPatches {
				i := slices.IndexFunc(rendered, func(o *unstructured.Unstructured) bool { return o.GetKind()+"/"+o.GetName() == name })
				require.GreaterOrEqual(t, i, 0, "the JSON patch's object %s is rendered", name)
				assertPatched(t, rendered[i].Object, ops, name)
			}
			for _, patch := range merges {
				i := slices.Index(objectNames(rendered), objectNames([]*unstructured.Unstructured{patch})[0])
				require.GreaterOrEqual(t, i, 0, "the patch's object %s is rendered", patch.GetName())
				assertHolds(t, rendered[i].Object, patch.Object, objectNames(rendered)[i])
			}

			var images []string
			for _, o := range rendered {
				if o.GetKind() == "Deployment" {
					containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
					require.NoError(t, err)
					for _, c := range containers {
						images = append(images, c.(map[string]any)["image"].(string))
					}
				}
			}
			assert.Equal(t, []string{ex.image}, images)

			kubectl("apply", "-k", dir)
			got := strings.Fields(kubectl("get", "-k", dir, "-o", "name"))
			assert.ElementsMatch(t, objectNames(want), got, "every object is on the API server")

			again := strings.Split(strings.TrimSpace(kubectl("apply", "-k", dir, "--dry-run=server")), "\n")
			assert.Len(t, again, len(want))
			for _, line := range again {
				assert.Contains(t, line, " unchanged", "applying again changes nothing")
			}
		})
	}

	// The controller-runtime twins' config folders, laid out as
	// kubebuilder's scaffold lays them out, whose lines docs/lines-of-code.md
	// counts, render: with stand-ins for what controller-gen would generate
	// into them (the CRDs, role.yaml, the webhook configurations), which are
	// not in the repository and not counted.
	twins := []struct {
		name      string
		generated map[string]string // stand-in file in config -> the ctrlkit example's file it is made from ("" for a ClusterRole)
		kinds     []string          // rendered, beside the namespace, ServiceAccount, roles and bindings
	}{
		{name: "crfoo", generated: map[string]string{"crd/bases/samplecontroller.k8s.io_foos.yaml": "foo/crd/samplecontroller.k8s.io_foos.yaml", "rbac/role.yaml": ""},
			kinds: []string{"CustomResourceDefinition", "Deployment"}},
		{name: "crexternal", generated: map[string]string{"rbac/role.yaml": ""}, kinds: []string{"Deployment"}},
		{name: "crfleet", generated: map[string]string{"rbac/role.yaml": ""}, kinds: []string{"Deployment"}},
		{name: "crbucket", generated: map[string]string{
			"crd/bases/storage.ctrlkit.io_buckets.yaml": "examples/bucket/deploy/crd/storage.ctrlkit.io_buckets.yaml",
			"rbac/role.yaml":         "",
			"webhook/manifests.yaml": "examples/bucket/deploy/webhook.yaml",
		}, kinds: []string{"Certificate", "CustomResourceDefinition", "Deployment", "Issuer", "MutatingWebhookConfiguration", "Service", "ValidatingWebhookConfiguration"}},
	}
	for _, tw := range twins {
		t.Run(tw.name, func(t *testing.T) {
			config := filepath.Join(t.TempDir(), "config")
			require.NoError(t, os.CopyFS(config, os.DirFS(filepath.Join(root, "testenv", "bench", "cmd", tw.name, "config"))))
			for rel, from := range tw.generated {
				data := []byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: manager-role\nrules: []\n")
				if from != "" {
					data, err = os.ReadFile(filepath.Join(root, from))
					require.NoError(t, err)
				}
				if rel == "webhook/manifests.yaml" {
					// controller-gen's: the configurations, calling the scaffold's Service.
					var configs []string
					for _, doc := range strings.Split(string(data), "\n---\n") {
						if strings.Contains(doc, "WebhookConfiguration\n") {
							configs = append(configs, strings.NewReplacer("name: bucket-webhook", "name: webhook-service", "namespace: bucket-system", "namespace: system").Replace(doc))
						}
					}
					data = []byte(strings.Join(configs, "\n---\n"))
				}
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(config, rel)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(config, rel), data, 0o644))
			}
			cmd := cp.KubectlCommand(t.Context(), "kustomize", filepath.Join(config, "default"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "kubectl kustomize %s/config/default:\n%s", tw.name, stderr.String())
			kinds := map[string]bool{}
			for _, o := range decodeObjects(t, tw.name, stdout.Bytes()) {
				kinds[o.GetKind()] = true
				if o.GetKind() == "Deployment" {
					containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
					require.Len(t, containers, 1)
					assert.Equal(t, "ctrlkit/"+tw.name+":dev", containers[0].(map[string]any)["image"])
				}
				if o.GetKind() == "Certificate" {
					names, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames")
					assert.Equal(t, "crbucket-webhook-service.bucket-system.svc", names[0], "the Service's name, by the replacements")
				}
			}
			for _, k := range append([]string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, tw.kinds...) {
				assert.True(t, kinds[k], "a %s is rendered", k)
			}
		})
	}
}

// kustomization is the part of a kustomization file that these tests read.
type kustomization struct {
	Resources []string `json:"resources"`
	Patches   []struct {
		Path   string         `json:"path"`
		Target map[string]any `json:"target"` // a JSON patch's object
	} `json:"patches"`
}

// kustomizationObjects reads the objects of the manifests that the
// kustomization in dir lists, following directories it lists to their own
// kustomizations. It fails the test when a manifest in the directory of a
// kustomization (or below, up to another kustomization) is not listed.
func kustomizationObjects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	k := readKustomization(t, dir)
	require.NotEmpty(t, k.Resources, "%s/%s lists no resources", dir, kustomizationFile)

	var objs []*unstructured.Unstructured
	listed := map[string]bool{}
	for _, p := range k.Patches {
		listed[filepath.Join(dir, p.Path)] = true // not objects of their own
	}
	for _, res := range k.Resources {
		path := filepath.Join(dir, res)
		info, err := os.Stat(path)
		require.NoError(t, err, "%s/%s: resource %s", dir, kustomizationFile, res)
		if info.IsDir() {
			objs = append(objs, kustomizationObjects(t, path)...)
			continue
		}
		listed[path] = true
		objs = append(objs, readManifest(t, path)...)
	}

	// Every manifest beside the kustomization is listed in it.
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if _, err := os.Stat(filepath.Join(path, kustomizationFile)); path != dir && err == nil {
				return filepath.SkipDir // a kustomization of its own
			}
			return nil
		}
		ext := filepath.Ext(path)
		if d.Name() != kustomizationFile && slices.Contains([]string{".yaml", ".yml", ".json"}, ext) {
			rel, _ := filepath.Rel(dir, path)
			assert.True(t, listed[path], "%s is not a resource of %s/%s", rel, dir, kustomizationFile)
		}
		return nil
	})
	require.NoError(t, err)
	return objs
}

// kustomizationPatches reads the strategic-merge patches that the
// kustomization in dir lists, and its JSON patches by the name of their
// target (as objectNames has it).
func kustomizationPatches(t *testing.T, dir string) (merges []*unstructured.Unstructured, jsonPatches map[string][]jsonPatchOp) {
	t.Helper()
	jsonPatches = map[string][]jsonPatchOp{}
	for _, p := range readKustomization(t, dir).Patches {
		if p.Target == nil {
			merges = append(merges, readManifest(t, filepath.Join(dir, p.Path))...)
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, p.Path))
		require.NoError(t, err)
		var ops []jsonPatchOp
		require.NoError(t, utilyaml.Unmarshal(data, &ops), p.Path)
		name := p.Target["kind"].(string) + "/" + p.Target["name"].(string)
		jsonPatches[name] = append(jsonPatches[name], ops...)
	}
	return merges, jsonPatches
}

// jsonPatchOp is an operation of a JSON patch.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// assertPatched asserts that the value of each add or replace operation is
// at its path in obj (in the list, for a path that ends in "/-").
func assertPatched(t *testing.T, obj map[string]any, ops []jsonPatchOp, where string) {
	t.Helper()
	for _, op := range ops {
		if op.Op != "add" && op.Op != "replace" {
			continue
		}
		var cur any = obj
		parts := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
		last := parts[len(parts)-1]
		if last == "-" {
			parts = parts[:len(parts)-1]
		}
		for _, part := range parts {
			switch c := cur.(type) {
			case map[string]any:
				cur = c[part]
			case []any:
				i, err := strconv.Atoi(part)
				require.NoError(t, err, "%s: %s", where, op.Path)
				require.Less(t, i, len(c), "%s: %s", where, op.Path)
				cur = c[i]
			}
		}
		if last == "-" {
			assert.Contains(t, cur, op.Value, "%s: %s", where, op.Path)
		} else {
			assert.Equal(t, op.Value, cur, "%s: %s", where, op.Path)
		}
	}
}

// readKustomization reads the kustomization in dir.
func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, kustomizationFile))
	require.NoError(t, err)
	var k kustomization
	require.NoError(t, utilyaml.Unmarshal(data, &k), "%s/%s", dir, kustomizationFile)
	return k
}

// readManifest reads the objects of a YAML file.
func readManifest(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return decodeObjects(t, path, data)
}

// assertHolds asserts that every value of the patch's maps is in obj; the
// elements of a list of named objects (containers, say), merged by name
// as a strategic-merge patch does, are matched by name.
func assertHolds(t *testing.T, obj, patch map[string]any, where string) {
	t.Helper()
	for k, want := range patch {
		switch w := want.(type) {
		case map[string]any:
			got, _ := obj[k].(map[string]any)
			assertHolds(t, got, w, where+"."+k)
			continue
		case []any:
			if named(w) {
				got, _ := obj[k].([]any)
				for _, e := range w {
					name := e.(map[string]any)["name"]
					i := slices.IndexFunc(got, func(g any) bool { m, ok := g.(map[string]any); return ok && m["name"] == name })
					if assert.GreaterOrEqual(t, i, 0, "%s.%s[name=%v]", where, k, name) {
						assertHolds(t, got[i].(map[string]any), e.(map[string]any), fmt.Sprintf("%s.%s[name=%v]", where, k, name))
					}
				}
				continue
			}
		}
		assert.Equal(t, want, obj[k], "%s.%s", where, k)
	}
}

// named tells whether every element of list is an object with a name.
func named(list []any) bool {
	for _, e := range list {
		if m, ok := e.(map[string]any); !ok || m["name"] == nil {
			return false
		}
	}
	return len(list) > 0
}

// decodeObjects decodes every YAML document of data (from where) into an
// object; empty documents are skipped.
func decodeObjects(t *testing.T, where string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		require.NoError(t, err, where)
		if len(obj.Object) == 0 {
			continue
		}
		require.NotEmpty(t, obj.GetKind(), "%s: an object without a kind", where)
		objs = append(objs, obj)
	}
}

// objectNames names objs the way kubectl get -o name does: the lowercase
// kind, with its API group if any, a slash and the name.
func objectNames(objs []*unstructured.Unstructured) []string {
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		kind := strings.ToLower(o.GetKind())
		if group := o.GroupVersionKind().Group; group != "" {
			kind += "." + group
		}
		names = append(names, kind+"/"+o.GetName())
	}
	return names
}
