package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The files of a deploy run, in the -deploy directory, and the directory
// of the user's patches in it.
var deployFiles = []string{"kustomization.yaml", "namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "deployment.yaml"}

const patchesDir = "patches"

// The operator's ports, as its Deployment runs it: operator.Flags' flags
// for them are set to these.
const (
	metricsPort = 8080
	probesPort  = 8081
	webhookPort = 9443
)

// deployment is what generateDeploy makes the manifests of.
type deployment struct {
	name, namespace, image string
	dir                    string   // relative to the module root
	crdDir, rbacDir        string   // of the same run, relative to the module root; "" if none
	webhookDir             string   // "" if the run generates no webhooks
	webhooks               bool     // whether webhook.yaml has a Service
	conversions            []string // the CRDs crd-conversion.yaml patches; none if it does not exist
	mutating, validating   []string // the webhook configurations that get the CA
	certSecret             string   // the webhooks' certificate's Secret in namespace
	service                string   // the webhook Service's name, in namespace
}

// podNamespaceEnv is the variable of the operator's container that holds
// its pod's namespace (downward API); its arguments name the namespace as
// $(POD_NAMESPACE), which the kubelet expands.
const podNamespaceEnv = "POD_NAMESPACE"

// expandPodNamespace returns the arguments of container as the kubelet
// runs it in a pod of namespace: $(NAME) of an env variable that takes
// the pod's metadata.namespace replaced by namespace.
func expandPodNamespace(container any, namespace string) []string {
	var names []string
	env, _ := dig(container, "env").([]any)
	for _, e := range env {
		if str(e, "valueFrom", "fieldRef", "fieldPath") == "metadata.namespace" {
			names = append(names, str(e, "name"))
		}
	}
	as, _ := dig(container, "args").([]any)
	var out []string
	for _, a := range as {
		s, _ := a.(string)
		for _, n := range names {
			s = strings.ReplaceAll(s, "$("+n+")", namespace)
		}
		out = append(out, s)
	}
	return out
}

// generateDeploy writes into st the base manifests of the operator's
// deployment (see deployFiles), for kubectl apply -k: its namespace (only
// its own: the namespaces of its markers' Roles must exist), its
// ServiceAccount bound to the ClusterRole and Roles of the run's
// role.yaml, a Deployment of the image with leader election, the metrics
// and probes endpoints and, with webhooks, their server with a
// certificate the operator issues itself; and a kustomization that lists
// them with the run's CRDs, roles and webhooks, and the user's patches:
// each file in patches/, a strategic-merge patch (an object) or a JSON
// patch of the Deployment (a list of operations).
func generateDeploy(root string, st *stage, d deployment) error {
	// Without +kubebuilder:rbac markers (an operator that only serves
	// webhooks) controller-gen writes no role.yaml: no roles to bind but
	// those of what the Deployment makes the operator do.
	rolesFile := filepath.Join(st.path(d.rbacDir), "role.yaml")
	var roles []map[string]any
	data, err := os.ReadFile(rolesFile)
	hasRoles := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("-deploy: reading the roles: %w", err)
	default:
		if roles, err = readDocs(filepath.Join(d.rbacDir, "role.yaml"), data); err != nil {
			return fmt.Errorf("-deploy: reading the roles: %w", err)
		}
	}
	dir := st.path(d.dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name, comment string, docs ...any) error {
		return writeManifest(filepath.Join(dir, name), comment, docs...)
	}
	meta := func(name string) map[string]any {
		return map[string]any{"name": name, "namespace": d.namespace}
	}
	subject := []any{map[string]any{"kind": "ServiceAccount", "name": d.name, "namespace": d.namespace}}

	// Only the operator's own namespace: one of a marker's Role holds
	// someone else's objects, and kubectl delete -k would delete it with
	// them. Those must exist before kubectl apply -k; the comment names them.
	comment := "# The operator's namespace. The Roles of its +kubebuilder:rbac markers in other\n# namespaces need them to exist: this kustomization does not create them (kubectl\n# delete -k would delete them with their objects).\n"
	if others := roleNamespaces(roles, d.namespace); len(others) > 0 {
		comment += "# Namespaces that must exist before kubectl apply -k: " + strings.Join(others, ", ") + ".\n"
	}
	if err := write("namespace.yaml", comment,
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": d.namespace}}); err != nil {
		return err
	}
	if err := write("serviceaccount.yaml", "# The operator's identity.\n",
		map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(d.name)}); err != nil {
		return err
	}
	var bindings []any
	for _, r := range roles {
		kind, _ := r["kind"].(string)
		m, _ := r["metadata"].(map[string]any)
		name, _ := m["name"].(string)
		ns, _ := m["namespace"].(string)
		binding := map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1",
			"roleRef":    map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
			"subjects":   subject,
		}
		switch kind {
		case "ClusterRole":
			binding["kind"], binding["metadata"] = "ClusterRoleBinding", map[string]any{"name": d.name}
		case "Role":
			binding["kind"], binding["metadata"] = "RoleBinding", map[string]any{"name": d.name, "namespace": ns}
		default:
			continue
		}
		bindings = append(bindings, binding)
	}
	if hasRoles && len(bindings) == 0 {
		return errors.New("-deploy: the run's role.yaml has no ClusterRole or Role to bind the operator to")
	}
	own := deploymentRoles(d)
	for _, r := range own {
		m := r["metadata"].(map[string]any)
		binding := map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1",
			"metadata":   m,
			"roleRef":    map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": r["kind"], "name": m["name"]},
			"subjects":   subject,
		}
		if r["kind"] == "ClusterRole" {
			binding["kind"] = "ClusterRoleBinding"
		} else {
			binding["kind"] = "RoleBinding"
		}
		bindings = append(bindings, r, binding)
	}
	if err := write("rbac.yaml", "# The operator's ServiceAccount bound to the roles of its +kubebuilder:rbac markers,\n# and to the roles of what its Deployment makes it do.\n", bindings...); err != nil {
		return err
	}
	if err := write("deployment.yaml", "# The operator. Its own flags, replicas and resources are the user's\n# patches (patches/ beside the kustomization).\n", deploymentManifest(d)); err != nil {
		return err
	}

	// The kustomization lists files by their path from dir, which must be
	// in it: kustomize loads no file outside the kustomization's root.
	var resources []string
	add := func(rel string) error {
		r, ok := inside(d.dir, rel)
		if !ok {
			return fmt.Errorf("-deploy: %s is outside %s, where kustomize cannot load it: generate it into %s or below", rel, d.dir, d.dir)
		}
		resources = append(resources, r)
		return nil
	}
	if r, ok := inside(d.dir, d.crdDir); d.crdDir != "" && !ok {
		// A directory outside is a resource if it is a kustomization.
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(d.crdDir), "kustomization.yaml")); err != nil {
			return fmt.Errorf("-deploy: the CRDs in %s are outside %s, where kustomize cannot load them: generate them into %s or below, or give %s a kustomization.yaml", d.crdDir, d.dir, d.dir, d.crdDir)
		}
		resources = append(resources, r)
	}
	crds, err := crdNames(st.path(d.crdDir), d.crdDir != "")
	if err != nil {
		return err
	}
	if _, ok := inside(d.dir, d.crdDir); d.crdDir != "" && ok {
		entries, err := os.ReadDir(st.path(d.crdDir))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".yaml") {
				if err := add(path.Join(d.crdDir, e.Name())); err != nil {
					return err
				}
			}
		}
	}
	resources = append(resources, "namespace.yaml", "serviceaccount.yaml")
	if hasRoles {
		if err := add(path.Join(d.rbacDir, "role.yaml")); err != nil {
			return err
		}
	}
	resources = append(resources, "rbac.yaml", "deployment.yaml")
	if d.webhookDir != "" {
		if err := add(path.Join(d.webhookDir, webhookFile)); err != nil {
			return err
		}
	}
	var patches []any
	// kustomize fails on a patch whose object is not among the resources:
	// the conversion patch is listed with its CRDs, and left to whoever
	// installs them if the run generates none of them.
	var listed, missing []string
	for _, c := range d.conversions {
		if slices.Contains(crds, c) {
			listed = append(listed, c)
		} else {
			missing = append(missing, c)
		}
	}
	if len(listed) > 0 && len(missing) > 0 {
		return fmt.Errorf("-deploy: %s patches the conversion of %s, which the run's CRDs do not include (%s has only %s): generate every CRD of a +ctrlkit:conversionwebhook marker, or none",
			conversionFile, strings.Join(missing, ", "), d.crdDir, strings.Join(listed, ", "))
	}
	if len(listed) > 0 {
		// Beside webhook.yaml, which add found inside dir.
		r, _ := inside(d.dir, path.Join(d.webhookDir, conversionFile))
		patches = append(patches, map[string]any{"path": r})
	}
	userPatches, err := readPatches(filepath.Join(root, filepath.FromSlash(d.dir), patchesDir))
	if err != nil {
		return err
	}
	for _, p := range userPatches {
		entry := map[string]any{"path": path.Join(patchesDir, p.name)}
		if p.json {
			entry["target"] = map[string]any{"kind": "Deployment", "name": d.name, "namespace": d.namespace}
		}
		patches = append(patches, entry)
	}
	kustomization := map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  resources,
	}
	if len(patches) > 0 {
		kustomization["patches"] = patches
	}
	return write("kustomization.yaml", "# The operator and its API: kubectl apply -k "+d.dir+"\n# Patches of its own go into "+patchesDir+"/ (then run apigen again): a strategic-merge\n# patch of an object, or a JSON patch (a list of operations) of the Deployment.\n", kustomization)
}

// roleNamespaces returns the namespaces of the Roles of roles other than
// own, sorted: the Roles cannot be created before them, and the
// kustomization does not create them.
func roleNamespaces(roles []map[string]any, own string) []string {
	var out []string
	for _, r := range roles {
		m, _ := r["metadata"].(map[string]any)
		ns, _ := m["namespace"].(string)
		if r["kind"] == "Role" && ns != "" && ns != own && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}

// deploymentRoles are the roles of what the Deployment makes the operator
// do beyond its markers' roles, each named <name>-deployment: the leader
// election's Lease in its namespace (--leader-elect) and, with webhooks,
// the certificate's Secret (--webhook-cert-secret, created, then read and
// renewed by name), and the CA published into the webhook configurations
// and the CRDs' conversion, by name.
func deploymentRoles(d deployment) []map[string]any {
	name := d.name + "-deployment"
	rule := func(group, resource string, names []string, verbs ...string) map[string]any {
		r := map[string]any{"apiGroups": []any{group}, "resources": []any{resource}, "verbs": verbs}
		if len(names) > 0 {
			r["resourceNames"] = names
		}
		return r
	}
	rules := []any{rule("coordination.k8s.io", "leases", nil, "get", "create", "update")}
	var clusterRules []any
	if d.webhooks {
		rules = append(rules, rule("", "secrets", nil, "create"), rule("", "secrets", []string{d.certSecret}, "get", "update"))
		if len(d.mutating) > 0 {
			clusterRules = append(clusterRules, rule("admissionregistration.k8s.io", "mutatingwebhookconfigurations", d.mutating, "get", "update"))
		}
		if len(d.validating) > 0 {
			clusterRules = append(clusterRules, rule("admissionregistration.k8s.io", "validatingwebhookconfigurations", d.validating, "get", "update"))
		}
		if len(d.conversions) > 0 {
			clusterRules = append(clusterRules, rule("apiextensions.k8s.io", "customresourcedefinitions", d.conversions, "get", "patch"))
		}
	}
	out := []map[string]any{{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
		"metadata": map[string]any{"name": name, "namespace": d.namespace}, "rules": rules,
	}}
	if len(clusterRules) > 0 {
		out = append(out, map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]any{"name": name}, "rules": clusterRules,
		})
	}
	return out
}

// crdNames returns the names of the CustomResourceDefinitions in the YAML
// files of dir, sorted; none if !generated.
func crdNames(dir string, generated bool) ([]string, error) {
	if !generated {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		docs, err := readDocs(p, data)
		if err != nil {
			return nil, err
		}
		for _, doc := range docs {
			if doc["kind"] == "CustomResourceDefinition" {
				m, _ := doc["metadata"].(map[string]any)
				if name, _ := m["name"].(string); name != "" {
					names = append(names, name)
				}
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// inside returns the path of rel from dir (both relative to the module
// root, slash-separated), and whether rel is in dir or below it.
func inside(dir, rel string) (string, bool) {
	r, err := filepath.Rel(filepath.FromSlash(dir), filepath.FromSlash(rel))
	if err != nil {
		return "", false
	}
	r = filepath.ToSlash(r)
	return r, r != ".." && !strings.HasPrefix(r, "../")
}

// writeManifest writes docs as the YAML documents of a file marked as
// apigen's (yamlMarker), with comment (whole "#" lines) after the marker.
func writeManifest(p, comment string, docs ...any) error {
	var b bytes.Buffer
	b.WriteString(yamlMarker)
	b.WriteString(comment)
	for i, doc := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		data, err := yaml.Marshal(doc)
		if err != nil {
			return err
		}
		b.Write(data)
	}
	return os.WriteFile(p, b.Bytes(), 0o644)
}

// deploymentManifest is the operator's Deployment.
func deploymentManifest(d deployment) map[string]any {
	labels := map[string]any{"app.kubernetes.io/name": d.name}
	// The namespace the arguments name is the pod's, which the kubelet
	// expands from the downward API: an overlay that moves the
	// kustomization to another namespace moves the Lease, the Secret and
	// the certificate's host with it.
	ns := "$(" + podNamespaceEnv + ")"
	args := []any{
		"--leader-elect",
		"--leader-elect-namespace=" + ns,
		fmt.Sprintf("--metrics-bind-address=:%d", metricsPort),
		fmt.Sprintf("--health-probe-bind-address=:%d", probesPort),
	}
	ports := []any{
		map[string]any{"name": "metrics", "containerPort": metricsPort},
		map[string]any{"name": "probes", "containerPort": probesPort},
	}
	if d.webhooks {
		args = append(args, fmt.Sprintf("--webhook-bind-address=:%d", webhookPort),
			"--webhook-cert-secret="+ns+"/"+d.certSecret,
			"--webhook-cert-hosts="+d.service+"."+ns+".svc")
		ports = append(ports, map[string]any{"name": "webhooks", "containerPort": webhookPort})
	}
	probe := func(path string, period int) map[string]any {
		return map[string]any{"httpGet": map[string]any{"path": path, "port": "probes"}, "periodSeconds": period}
	}
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": d.name, "namespace": d.namespace, "labels": labels},
		"spec": map[string]any{
			"replicas": 1,
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"serviceAccountName": d.name,
					"securityContext":    map[string]any{"runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
					// Longer than the worst-case stop: twice operator.Flags'
					// default --shutdown-timeout (30s), then releasing the Lease.
					"terminationGracePeriodSeconds": 75,
					"containers": []any{map[string]any{
						"name":  "operator",
						"image": d.image,
						"env": []any{map[string]any{"name": podNamespaceEnv, "valueFrom": map[string]any{
							"fieldRef": map[string]any{"fieldPath": "metadata.namespace"}}}},
						"args":           args,
						"ports":          ports,
						"livenessProbe":  probe("/healthz", 10),
						"readinessProbe": probe("/readyz", 5),
						"resources": map[string]any{
							"requests": map[string]any{"cpu": "20m", "memory": "32Mi"},
							"limits":   map[string]any{"memory": "128Mi"},
						},
						"securityContext": map[string]any{
							"allowPrivilegeEscalation": false,
							"readOnlyRootFilesystem":   true,
							"capabilities":             map[string]any{"drop": []any{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

// userPatch is a file of the user's patches directory.
type userPatch struct {
	name string
	json bool // a JSON patch (a list of operations), not a strategic-merge one
	// ops are the JSON patch's operations; objects the strategic-merge
	// patches, one a document of the file.
	ops     []map[string]any
	objects []map[string]any
}

// readPatches lists the YAML files of dir, sorted, each with its kind of
// patch and what it holds; none if dir does not exist.
func readPatches(dir string) ([]userPatch, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []userPatch
	for _, e := range entries {
		if e.IsDir() || !slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(e.Name())) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		p, err := readPatch(filepath.Join(dir, e.Name()), data)
		if err != nil {
			return nil, err
		}
		p.name = e.Name()
		out = append(out, p)
	}
	return out, nil
}

// readPatch decodes a patch file, read from file: one document that is a
// list of operations (a JSON patch), or one or more documents that are
// each an object (strategic-merge patches, which kustomize applies each to
// its object).
func readPatch(file string, data []byte) (userPatch, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []any
	for {
		var doc any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return userPatch{}, fmt.Errorf("-deploy: the patch %s: %w", file, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
	if ops, ok := onlyDoc(docs).([]any); ok {
		p := userPatch{json: true}
		for _, op := range ops {
			m, ok := op.(map[string]any)
			if !ok {
				return userPatch{}, fmt.Errorf("-deploy: the patch %s: an operation of the JSON patch is not an object", file)
			}
			p.ops = append(p.ops, m)
		}
		return p, nil
	}
	var p userPatch
	for _, doc := range docs {
		m, ok := doc.(map[string]any)
		if !ok {
			return userPatch{}, fmt.Errorf("-deploy: the patch %s is neither objects, one a document (strategic-merge patches), nor one list of operations (a JSON patch)", file)
		}
		p.objects = append(p.objects, m)
	}
	if len(p.objects) == 0 {
		return userPatch{}, fmt.Errorf("-deploy: the patch %s is empty", file)
	}
	return p, nil
}

// onlyDoc returns the one document of docs, or nil if there are more or
// none.
func onlyDoc(docs []any) any {
	if len(docs) != 1 {
		return nil
	}
	return docs[0]
}

// readDocs decodes the YAML documents of data, read from p, into maps.
func readDocs(p string, data []byte) ([]map[string]any, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []map[string]any
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if doc != nil {
			out = append(out, doc)
		}
	}
}
