package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"sigs.k8s.io/controller-tools/pkg/genall"
	"sigs.k8s.io/controller-tools/pkg/markers"
	"sigs.k8s.io/controller-tools/pkg/webhook"
	"sigs.k8s.io/yaml"
)

// Files of a webhook run: the manifests in the -webhook directory and the
// Go file beside the markers.
const (
	webhookFile    = "webhook.yaml"
	conversionFile = "crd-conversion.yaml"
	webhookGoFile  = "zz_generated.webhooks.go"
)

// ConversionWebhook is the +ctrlkit:conversionwebhook marker: the CRD
// whose versions the operator converts, at Path of the same Service as
// its +kubebuilder:webhook markers.
type ConversionWebhook struct {
	// CRD is the CustomResourceDefinition's name, <plural>.<group>.
	CRD string `marker:"crd"`
	// Path is where the operator serves the conversion.
	Path string `marker:"path"`
	// ServiceName, ServiceNamespace and ServicePort are the Service's, as
	// in +kubebuilder:webhook (defaults <operator>-webhooks, the
	// operator's namespace and 443).
	ServiceName      string `marker:"serviceName,optional"`
	ServiceNamespace string `marker:"serviceNamespace,optional"`
	ServicePort      *int32 `marker:"servicePort,optional"`
	// ConversionReviewVersions default to v1.
	ConversionReviewVersions []string `marker:"conversionReviewVersions,optional"`
}

var conversionDefinition = markers.Must(markers.MakeDefinition("ctrlkit:conversionwebhook", markers.DescribesPackage, ConversionWebhook{}))

// The Service of a marker that names none: named after the operator
// (<operator> + serviceSuffix, not controller-gen's "webhook-service",
// which every operator in a namespace would share), in the namespace of
// -deploy-namespace or controller-gen's "system" without one, at
// controller-gen's port.
const (
	serviceSuffix           = "-webhooks"
	defaultServiceNamespace = "system"
	defaultServicePort      = 443
)

// The names controller-gen gives the configurations without a
// +kubebuilder:webhookconfiguration marker: every operator generated so
// would share them, so apigen names them after the operator instead.
const (
	placeholderMutating   = "mutating-webhook-configuration"
	placeholderValidating = "validating-webhook-configuration"
)

// webhookService is the Service every webhook of an operator is called at.
type webhookService struct {
	name, namespace string
	port            int32
}

// serviceOf is the Service of a marker's fields, with the defaults for
// those it leaves empty: the operator's name with serviceSuffix, the
// namespace defaultNamespace and defaultServicePort.
func serviceOf(name, namespace string, port *int32, operator, defaultNamespace string) webhookService {
	s := webhookService{name: name, namespace: namespace, port: defaultServicePort}
	if s.name == "" {
		s.name = operator + serviceSuffix
	}
	if s.namespace == "" {
		s.namespace = defaultNamespace
	}
	if port != nil {
		s.port = *port
	}
	return s
}

func (s webhookService) String() string {
	return fmt.Sprintf("%s/%s port %d", s.namespace, s.name, s.port)
}

// webhookGenerator is controller-gen's webhook generator (the mutating
// and validating configurations, into manifests.yaml) with the rest of
// what the operator's webhooks need: the markers' Service, the CRDs'
// conversion, and what the operator's code reads of them. It keeps what
// it found for generateWebhooks.
type webhookGenerator struct {
	found *webhookMarkers
	// name is the operator's, of the configurations that no
	// +kubebuilder:webhookconfiguration marker names; namespace is the
	// Service's where the markers name none.
	name, namespace string
}

// webhookMarkers is what the markers of the loaded packages say.
type webhookMarkers struct {
	pkgDir     string // of the one package with markers, absolute; "" if none
	pkgName    string
	pkgPath    string
	service    webhookService
	paths      []string // served under the Service, sorted, unique
	mutating   []string // the configuration's name if there is a mutating webhook; none if not
	validating []string // the same of the validating webhooks
	// mutatingServed and validatingServed tell whether a webhook of the
	// configuration is called at the Service: only then does it get the
	// CA (a configuration of webhooks called at URLs trusts their CAs).
	mutatingServed, validatingServed bool
	conversions                      []ConversionWebhook
}

func (g webhookGenerator) RegisterMarkers(into *markers.Registry) error {
	if err := (webhook.Generator{}).RegisterMarkers(into); err != nil {
		return err
	}
	return into.Register(conversionDefinition)
}

func (g webhookGenerator) Generate(ctx *genall.GenerationContext) error {
	found := g.found
	var services []webhookService
	var hasMutating, hasValidating bool
	var mutatingName, validatingName string
	var pkgs []string
	for _, root := range ctx.Roots {
		set, err := markers.PackageMarkers(ctx.Collector, root)
		if err != nil {
			return fmt.Errorf("package %s: %w", root.PkgPath, err)
		}
		admission, conversions := set[webhook.ConfigDefinition.Name], set[conversionDefinition.Name]
		if len(admission) == 0 && len(conversions) == 0 {
			continue
		}
		if len(root.CompiledGoFiles) == 0 && len(root.GoFiles) == 0 {
			return fmt.Errorf("package %s: no Go files", root.PkgPath)
		}
		files := root.GoFiles
		if len(files) == 0 {
			files = root.CompiledGoFiles
		}
		pkgs = append(pkgs, root.PkgPath)
		found.pkgDir, found.pkgName, found.pkgPath = filepath.Dir(files[0]), root.Name, root.PkgPath
		for _, m := range admission {
			c := m.(webhook.Config)
			if c.Mutating {
				hasMutating = true
			} else {
				hasValidating = true
			}
			if c.URL != "" {
				continue // called at its URL: neither the Service nor this operator's server
			}
			if c.Mutating {
				found.mutatingServed = true
			} else {
				found.validatingServed = true
			}
			if c.Path == "" {
				return fmt.Errorf("package %s: +kubebuilder:webhook %s has neither a path nor a url", root.PkgPath, c.Name)
			}
			services = append(services, serviceOf(c.ServiceName, c.ServiceNamespace, c.ServicePort, g.name, g.namespace))
			found.paths = append(found.paths, c.Path)
		}
		for _, m := range conversions {
			c := m.(ConversionWebhook)
			if !strings.Contains(c.CRD, ".") {
				return fmt.Errorf("package %s: +ctrlkit:conversionwebhook crd=%q is not a CRD name, <plural>.<group>", root.PkgPath, c.CRD)
			}
			if !strings.HasPrefix(c.Path, "/") {
				return fmt.Errorf("package %s: +ctrlkit:conversionwebhook path=%q does not begin with /", root.PkgPath, c.Path)
			}
			if slices.ContainsFunc(found.conversions, func(o ConversionWebhook) bool { return o.CRD == c.CRD }) {
				return fmt.Errorf("package %s: two +ctrlkit:conversionwebhook markers for %s", root.PkgPath, c.CRD)
			}
			services = append(services, serviceOf(c.ServiceName, c.ServiceNamespace, c.ServicePort, g.name, g.namespace))
			found.paths = append(found.paths, c.Path)
			found.conversions = append(found.conversions, c)
		}
		for _, m := range set[webhook.WebhookConfigDefinition.Name] {
			c := m.(webhook.WebhookConfig)
			if c.Mutating {
				mutatingName = c.Name
			} else {
				validatingName = c.Name
			}
		}
	}
	// A configuration exists only for a kind of webhook there is (as
	// controller-gen generates it): the CA goes into those and no other.
	for _, kind := range []struct {
		has        bool
		name, held string
		into       *[]string
	}{{hasMutating, mutatingName, placeholderMutating, &found.mutating}, {hasValidating, validatingName, placeholderValidating, &found.validating}} {
		if !kind.has {
			continue
		}
		if kind.name == kind.held {
			return fmt.Errorf("+kubebuilder:webhookconfiguration name=%s is the name controller-gen gives every operator's configuration: name it after the operator", kind.name)
		}
		if kind.name == "" {
			kind.name = g.name
		}
		*kind.into = []string{kind.name}
	}
	if len(pkgs) > 1 {
		return fmt.Errorf("webhook markers in %d packages (%s): keep them in one, the one whose server serves them", len(pkgs), strings.Join(pkgs, ", "))
	}
	if len(pkgs) == 0 {
		return errors.New("no +kubebuilder:webhook or +ctrlkit:conversionwebhook marker in the packages of -webhook-paths")
	}
	for i, s := range services {
		if s != services[0] {
			return fmt.Errorf("the webhook markers name two Services, %s and %s: one operator serves its webhooks behind one", services[0], s)
		}
		if i == 0 {
			found.service = s
		}
	}
	slices.Sort(found.paths)
	found.paths = slices.Compact(found.paths)
	slices.SortFunc(found.conversions, func(a, b ConversionWebhook) int { return strings.Compare(a.CRD, b.CRD) })
	return webhook.Generator{}.Generate(ctx)
}

// generateWebhooks writes, from the +kubebuilder:webhook,
// +kubebuilder:webhookconfiguration and +ctrlkit:conversionwebhook markers
// of the packages of patterns:
//
//   - webhook.yaml into dir: the Service the webhooks are called at, which
//     selects the pods labelled app.kubernetes.io/name=<name> at their
//     port named "webhooks", and the mutating and validating
//     configurations, as controller-gen writes them;
//   - crd-conversion.yaml into dir, if a conversion marker names a CRD:
//     for each such CRD, a patch (for kustomize) that makes the operator
//     its conversion webhook;
//   - zz_generated.webhooks.go into the package of the markers (there must
//     be one): a constant for each path, and the certificate's host names
//     and the objects that get its CA, for operator.Flags.
//
// A marker that names no Service names <name>-webhooks, and one that
// names no Service namespace names namespace (the operator's,
// -deploy-namespace), or controller-gen's "system" if that is empty; every webhook of the configurations calls the one Service of the
// markers. A configuration without a +kubebuilder:webhookconfiguration
// marker is named name, the operator's, not with controller-gen's
// placeholder that every operator generated so would share.
//
// It returns the Go file's path, relative to root, slash-separated, and
// what the markers say.
func generateWebhooks(loads *packageLoads, root string, patterns []string, name, namespace, dir, tree, header string) (goFile string, found *webhookMarkers, err error) {
	if len(patterns) == 0 {
		return "", nil, fmt.Errorf("-webhook needs at least one package pattern in -webhook-paths")
	}
	if namespace == "" {
		namespace = defaultServiceNamespace
	}
	found = &webhookMarkers{}
	if err := controllerGen(loads, "webhook", webhookGenerator{found: found, name: name, namespace: namespace}, patterns, dir); err != nil {
		return "", nil, err
	}
	manifests := filepath.Join(dir, "manifests.yaml")
	configurations, err := os.ReadFile(manifests)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", nil, err
	}
	if err := os.Remove(manifests); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}

	var out bytes.Buffer
	out.WriteString(yamlMarker)
	out.WriteString("# The operator's webhooks: the Service the API server calls them at, and\n# the webhook configurations, from the markers of " + found.pkgPath + ".\n")
	if len(found.paths) > 0 {
		svc, err := yaml.Marshal(serviceManifest(found.service, name))
		if err != nil {
			return "", nil, err
		}
		out.Write(svc)
	}
	if len(bytes.TrimSpace(configurations)) > 0 {
		docs, err := readDocs(manifests, configurations)
		if err != nil {
			return "", nil, err
		}
		for _, doc := range docs {
			defaultScopes(doc)
			if err := callService(doc, found); err != nil {
				return "", nil, err
			}
			data, err := yaml.Marshal(doc)
			if err != nil {
				return "", nil, err
			}
			out.WriteString("---\n")
			out.Write(data)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, webhookFile), out.Bytes(), 0o644); err != nil {
		return "", nil, err
	}

	if len(found.conversions) > 0 {
		var docs []any
		for _, c := range found.conversions {
			docs = append(docs, conversionPatch(c, found.service))
		}
		if err := writeManifest(filepath.Join(dir, conversionFile), "# The conversion webhooks of the CRDs: patches of the CRDs, for kustomize.\n", docs...); err != nil {
			return "", nil, err
		}
	}

	src, err := webhooksGo(found, header)
	if err != nil {
		return "", nil, err
	}
	rel, err := filepath.Rel(root, found.pkgDir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", nil, fmt.Errorf("the webhook markers' package in %s is outside the module", found.pkgDir)
	}
	goFile = path.Join(filepath.ToSlash(rel), webhookGoFile)
	target := filepath.Join(tree, filepath.FromSlash(goFile))
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return "", nil, err
	}
	return goFile, found, os.WriteFile(target, src, 0o644)
}

// defaultScopes gives each rule of a webhook configuration the scope the
// API server defaults it to, "*", if it has none: a rule the server
// defaulted would differ from the manifest's, and since rules are a list
// without merge key, kubectl apply would replace them on every apply.
func defaultScopes(configuration map[string]any) {
	webhooks, _ := configuration["webhooks"].([]any)
	for _, w := range webhooks {
		wm, _ := w.(map[string]any)
		rules, _ := wm["rules"].([]any)
		for _, r := range rules {
			if rm, ok := r.(map[string]any); ok && rm["scope"] == nil {
				rm["scope"] = "*"
			}
		}
	}
}

// callService names a webhook configuration as found says (controller-gen
// names one without a +kubebuilder:webhookconfiguration marker with a
// placeholder) and makes each of its webhooks called at a Service call
// found.service (controller-gen's Service of a marker that names none is
// in its namespace "system").
func callService(configuration map[string]any, found *webhookMarkers) error {
	var names []string
	switch configuration["kind"] {
	case "MutatingWebhookConfiguration":
		names = found.mutating
	case "ValidatingWebhookConfiguration":
		names = found.validating
	default:
		return nil
	}
	if len(names) != 1 {
		return fmt.Errorf("controller-gen generated a %s, but the markers have no webhook of its kind", configuration["kind"])
	}
	meta, _ := configuration["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		configuration["metadata"] = meta
	}
	meta["name"] = names[0]
	webhooks, _ := configuration["webhooks"].([]any)
	for _, w := range webhooks {
		wm, _ := w.(map[string]any)
		cc, _ := wm["clientConfig"].(map[string]any)
		if svc, ok := cc["service"].(map[string]any); ok {
			svc["name"], svc["namespace"] = found.service.name, found.service.namespace
		}
	}
	return nil
}

// serviceManifest is the Service the webhooks are called at.
func serviceManifest(s webhookService, name string) map[string]any {
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   map[string]any{"name": s.name, "namespace": s.namespace},
		"spec": map[string]any{
			"selector": map[string]any{"app.kubernetes.io/name": name},
			// The API server calls conversion webhooks to list what the
			// operator's informers wait for before the pod is ready.
			"publishNotReadyAddresses": true,
			"ports":                    []any{map[string]any{"name": "webhooks", "port": s.port, "targetPort": "webhooks"}},
		},
	}
}

// conversionPatch makes the operator the conversion webhook of c.CRD.
func conversionPatch(c ConversionWebhook, s webhookService) map[string]any {
	versions := c.ConversionReviewVersions
	if len(versions) == 0 {
		versions = []string{"v1"}
	}
	service := map[string]any{"name": s.name, "namespace": s.namespace, "path": c.Path}
	if s.port != defaultServicePort {
		service["port"] = s.port
	}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": c.CRD},
		"spec": map[string]any{"conversion": map[string]any{
			"strategy": "Webhook",
			"webhook":  map[string]any{"conversionReviewVersions": versions, "clientConfig": map[string]any{"service": service}},
		}},
	}
}

// certHosts are the host names the certificate is issued for: the
// Service's, if a webhook is called at it.
func (f *webhookMarkers) certHosts() []string {
	if len(f.paths) == 0 {
		return nil
	}
	return []string{f.service.name + "." + f.service.namespace + ".svc"}
}

// caMutating and caValidating are the configurations that get the CA:
// those with a webhook called at the Service.
func (f *webhookMarkers) caMutating() []string {
	if !f.mutatingServed {
		return nil
	}
	return f.mutating
}

func (f *webhookMarkers) caValidating() []string {
	if !f.validatingServed {
		return nil
	}
	return f.validating
}

// webhooksGo is the Go file of the markers' package.
func webhooksGo(found *webhookMarkers, header string) ([]byte, error) {
	var b bytes.Buffer
	if header != "" {
		h, err := os.ReadFile(header)
		if err != nil {
			return nil, err
		}
		b.Write(h)
		if len(h) > 0 && !bytes.HasSuffix(h, []byte("\n\n")) {
			b.WriteString("\n")
		}
	}
	b.WriteString("// Code generated by apigen. DO NOT EDIT.\n\npackage " + found.pkgName + "\n\n")
	b.WriteString("import \"github.com/ctrlkit/ctrlkit/webhook\"\n\n")
	b.WriteString("// The paths of this package's webhook markers, where the API server calls\n// the webhooks: serve each of them.\nconst (\n")
	names := map[string]string{}
	for _, p := range found.paths {
		id := "webhookPath" + identifier(p)
		if other, ok := names[id]; ok {
			return nil, fmt.Errorf("the webhook paths %s and %s make the same Go name %s: make them differ in a letter or digit", other, p, id)
		}
		names[id] = p
		fmt.Fprintf(&b, "\t%s = %s\n", id, strconv.Quote(p))
	}
	b.WriteString(")\n\n")
	b.WriteString("// webhookCertHosts are the DNS names of the Service the webhooks are called\n// at, for operator.Flags.WebhookCertHosts.\n")
	hosts := found.certHosts()
	if len(hosts) == 0 {
		b.WriteString("var webhookCertHosts []string\n\n")
	} else {
		fmt.Fprintf(&b, "var webhookCertHosts = %s\n\n", stringSlice(hosts))
	}
	b.WriteString("// webhookCABundles are the objects that call the webhooks, for\n// operator.Flags.WebhookCABundles.\n")
	var crds []string
	for _, c := range found.conversions {
		crds = append(crds, c.CRD)
	}
	fmt.Fprintf(&b, "var webhookCABundles = webhook.CABundles{\n\tMutatingWebhookConfigurations: %s,\n\tValidatingWebhookConfigurations: %s,\n\tCRDs: %s,\n}\n",
		stringSlice(found.caMutating()), stringSlice(found.caValidating()), stringSlice(crds))
	return format.Source(b.Bytes())
}

// identifier turns a path into the end of a Go name: its letters and
// digits, each run of them capitalized ("/validate-bucket" is
// ValidateBucket).
func identifier(p string) string {
	var b strings.Builder
	upper := true
	for _, r := range p {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			upper = true
			continue
		}
		if upper {
			r = unicode.ToUpper(r)
			upper = false
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "Root"
	}
	return b.String()
}

func stringSlice(s []string) string {
	if len(s) == 0 {
		return "nil"
	}
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = strconv.Quote(v)
	}
	return "[]string{" + strings.Join(q, ", ") + "}"
}
