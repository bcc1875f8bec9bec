package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/metrics"
	"github.com/ctrlkit/ctrlkit/metrics/metricstest"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/webhook"
	"github.com/ctrlkit/ctrlkit/webhook/webhooktest"
)

// The Widget custom resource of the webhook tests: v1alpha1, the version
// objects are stored in, spells its color "colour"; v1 is the hub.
const (
	widgetGroup    = "e2e.ctrlkit.io"
	widgetV1alpha1 = widgetGroup + "/v1alpha1"
	widgetV1       = widgetGroup + "/v1"
)

var (
	widgetsV1       = schema.GroupVersionResource{Group: widgetGroup, Version: "v1", Resource: "widgets"}
	widgetsV1alpha1 = schema.GroupVersionResource{Group: widgetGroup, Version: "v1alpha1", Resource: "widgets"}
)

type widgetAlpha struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size   int32  `json:"size,omitempty"`
		Colour string `json:"colour,omitempty"`
	} `json:"spec"`
}

func (w *widgetAlpha) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size  int32  `json:"size,omitempty"`
		Color string `json:"color,omitempty"`
	} `json:"spec"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// widgetWebhooks are the three webhooks of the Widget.
func widgetWebhooks(t *testing.T) (validating, mutating, conversion http.Handler) {
	t.Helper()
	var err error
	validating, err = webhook.Validating(func(_ context.Context, req webhook.Request[*widget]) ([]string, field.ErrorList) {
		if req.Object == nil {
			return nil, nil
		}
		var warnings []string
		size := req.Object.Spec.Size
		if size > 5 {
			warnings = append(warnings, "spec.size: more than 5 is wasteful")
		}
		if size > 10 {
			return warnings, field.ErrorList{field.Invalid(field.NewPath("spec", "size"), size, "must be at most 10")}
		}
		return warnings, nil
	}, webhook.WithKind("Widget"))
	require.NoError(t, err)
	mutating, err = webhook.Mutating(func(_ context.Context, req webhook.Request[*widget]) error {
		if req.Object.Spec.Color == "" {
			req.Object.Spec.Color = "blue"
		}
		return nil
	}, webhook.WithKind("Widget"))
	require.NoError(t, err)
	conversion, err = webhook.Conversion([]webhook.Version[*widget]{
		webhook.Spoke(widgetV1alpha1, func(src *widgetAlpha, dst *widget) error {
			src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
			dst.Spec.Size, dst.Spec.Color = src.Spec.Size, src.Spec.Colour
			return nil
		}, func(src *widget, dst *widgetAlpha) error {
			src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
			dst.Spec.Size, dst.Spec.Colour = src.Spec.Size, src.Spec.Color
			return nil
		}),
		webhook.Hub[*widget](widgetV1),
	}, webhook.WithKind("Widget"))
	require.NoError(t, err)
	return validating, mutating, conversion
}

// webhookEnv is an API server that calls the Widget's webhooks, served by
// operator.Run in this process.
type webhookEnv struct {
	cp      *controlplane.ControlPlane
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	addr    string
	ca      *webhooktest.CA
	certDir string
	// bundle is the caBundle the configurations are created with: nil
	// when the operator publishes its own CA.
	bundle   []byte
	reg      *prometheus.Registry
	warnings *warningRecorder
	stop     func()
}

// warningRecorder keeps the warnings the API server sends.
type warningRecorder struct {
	mu   sync.Mutex
	list []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// TestWebhooks runs the Widget's webhooks behind kube-apiserver over TLS on
// 127.0.0.1: defaulting, refusals as kubectl prints them, conversion of
// stored objects, a certificate rotated while requests flow, and the
// webhooks down with each failurePolicy.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	env := newWebhookEnv(t)
	env.ca, env.certDir = webhooktest.NewCA(t), t.TempDir()
	env.bundle = env.ca.PEM
	certs, err := webhook.NewCertFiles(env.ca.Issue(t, env.certDir, 1, time.Now().Add(time.Hour)))
	require.NoError(t, err)
	env.start(t, certs)
	env.install(t)

	t.Run("defaulted", env.defaulted)
	t.Run("refused as kubectl prints it", env.refused)
	t.Run("stored v1alpha1 read as v1 and back", env.converted)
	t.Run("certificate rotated while requests flow", env.rotated)
	t.Run("webhooks down", env.down)
}

// newWebhookEnv starts an API server (without controllers) and the
// clients of the webhook tests; the webhooks are not served yet.
func newWebhookEnv(t *testing.T) *webhookEnv {
	t.Helper()
	cp := controlplane.StartT(t, controlplane.Options{Size: controlplane.APIServerOnly})
	env := &webhookEnv{cp: cp, warnings: &warningRecorder{}}
	cfg := cp.Config()
	cfg.WarningHandlerWithContext = env.warnings
	var err error
	env.kube, err = kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	env.dyn, err = dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return env
}

// start serves the webhooks with operator.Run until the test ends, at the
// address install gives the API server.
func (e *webhookEnv) start(t *testing.T, certs webhook.Certificates) {
	t.Helper()
	e.addr, e.reg, e.stop = e.serve(t, certs)
}

// serve runs a replica of the webhooks with operator.Run on a port of
// 127.0.0.1 of its own until the test ends, and returns its address, its
// metrics and a function that stops it (and that the test's cleanup
// calls).
func (e *webhookEnv) serve(t *testing.T, certs webhook.Certificates) (addr string, reg *prometheus.Registry, stop func()) {
	t.Helper()
	validating, mutating, conversion := widgetWebhooks(t)
	reg = prometheus.NewRegistry()
	rec, err := metrics.New(reg)
	require.NoError(t, err)
	addr = freeAddress(t)
	configMaps, err := webhook.Validating(func(_ context.Context, req webhook.Request[*corev1.ConfigMap]) ([]string, field.ErrorList) {
		if _, ok := req.Object.Data["forbidden"]; ok {
			return nil, field.ErrorList{field.Forbidden(field.NewPath("data", "forbidden"), "not in this test")}
		}
		return nil, nil
	})
	require.NoError(t, err)
	srv, err := webhook.NewServer(addr, certs, webhook.WithMetrics(rec),
		webhook.Handle("/validate-widget", validating), webhook.Handle("/mutate-widget", mutating), webhook.Handle("/convert-widget", conversion),
		webhook.Handle("/validate-configmap", configMaps))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, operator.WithWebhooks(srv), operator.WithControllers(idleController{}))
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return addr, reg, stop
}

// idleController is the controller operator.Run needs; it does nothing.
type idleController struct{}

func (idleController) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (idleController) HasSynced() bool               { return true }

// install creates the Widget CRD with its conversion webhook and the
// admission webhook configurations, and waits until all answer.
func (e *webhookEnv) install(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	url := func(path string) *string { return ptr.To("https://" + e.addr + path) }
	spec := func(colorField string) *apiextensionsv1.CustomResourceValidation {
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"size": {Type: "integer", Format: "int32"}, colorField: {Type: "string"},
				}},
			},
		}}
	}
	crds, err := apiextensionsclient.NewForConfig(e.cp.Config())
	require.NoError(t, err)
	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + widgetGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetGroup, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true, Storage: true, Schema: spec("colour")},
				{Name: "v1", Served: true, Schema: spec("color")},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: url("/convert-widget"), CABundle: e.bundle},
					ConversionReviewVersions: []string{"v1"},
				},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{widgetGroup}, APIVersions: []string{"v1"}, Resources: []string{"widgets"},
			Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
	}}
	none := ptr.To(admissionregistrationv1.SideEffectClassNone)
	fail := ptr.To(admissionregistrationv1.Fail)
	_, err = e.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "default.widgets." + widgetGroup, Rules: rules, SideEffects: none, FailurePolicy: fail,
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: url("/mutate-widget"), CABundle: e.bundle},
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](5),
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validate.widgets." + widgetGroup, Rules: rules, SideEffects: none, FailurePolicy: fail,
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: url("/validate-widget"), CABundle: e.bundle},
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](5),
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// ConfigMaps labelled policy=Fail or policy=Ignore are checked by a
	// webhook of that failurePolicy.
	var configMapHooks []admissionregistrationv1.ValidatingWebhook
	for _, policy := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
		configMapHooks = append(configMapHooks, admissionregistrationv1.ValidatingWebhook{
			Name: strings.ToLower(string(policy)) + ".configmaps." + widgetGroup, SideEffects: none, FailurePolicy: ptr.To(policy),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"policy": string(policy)}},
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: url("/validate-configmap"), CABundle: e.bundle},
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](5),
		})
	}
	_, err = e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "configmaps"}, Webhooks: configMapHooks,
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// Ready when a dry-run create through v1alpha1 comes back defaulted
	// (the mutating webhook, after a conversion) and a v1 list converts.
	probe := widgetObject(widgetV1alpha1, "probe", map[string]any{"size": int64(1)})
	require.NoError(t, wait.PollUntilContextTimeout(ctx, pollEvery, waitTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := e.dyn.Resource(widgetsV1alpha1).Namespace("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Logf("not yet: %v", err)
			return false, nil
		}
		colour, _, _ := unstructured.NestedString(got.Object, "spec", "colour")
		if colour != "blue" {
			return false, nil
		}
		if _, err = e.dyn.Resource(widgetsV1).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
			return false, nil
		}
		_, err = e.kube.CoreV1().ConfigMaps("default").Create(ctx, configMap("probe", admissionregistrationv1.Ignore), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err), nil
	}), "the webhooks answer")
	e.warnings.take()
}

// configMap is a ConfigMap the webhook of policy checks, with data the
// webhook forbids.
func configMap(name string, policy admissionregistrationv1.FailurePolicyType) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"policy": string(policy)}},
		Data:       map[string]string{"forbidden": "yes"},
	}
}

// widgetObject is a Widget of apiVersion named name with spec.
func widgetObject(apiVersion, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     spec,
	}}
}

func (e *webhookEnv) defaulted(t *testing.T) {
	ctx := t.Context()
	widgets := e.dyn.Resource(widgetsV1).Namespace("default")
	dry, err := widgets.Create(ctx, widgetObject(widgetV1, "dry", map[string]any{"size": int64(2)}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	color, _, _ := unstructured.NestedString(dry.Object, "spec", "color")
	assert.Equal(t, "blue", color, "a dry run is defaulted")
	_, err = widgets.Get(ctx, "dry", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "and not stored: %v", err)

	_, err = widgets.Create(ctx, widgetObject(widgetV1, "plain", map[string]any{"size": int64(2)}), metav1.CreateOptions{})
	require.NoError(t, err)
	got, err := widgets.Get(ctx, "plain", metav1.GetOptions{})
	require.NoError(t, err)
	color, _, _ = unstructured.NestedString(got.Object, "spec", "color")
	assert.Equal(t, "blue", color)

	_, err = widgets.Create(ctx, widgetObject(widgetV1, "red", map[string]any{"size": int64(2), "color": "red"}), metav1.CreateOptions{})
	require.NoError(t, err)
	got, err = widgets.Get(ctx, "red", metav1.GetOptions{})
	require.NoError(t, err)
	color, _, _ = unstructured.NestedString(got.Object, "spec", "color")
	assert.Equal(t, "red", color, "a color given is kept")
}

func (e *webhookEnv) refused(t *testing.T) {
	manifest := `apiVersion: e2e.ctrlkit.io/v1
kind: Widget
metadata:
  name: big
  namespace: default
spec:
  size: 11
`
	var stdout, stderr bytes.Buffer
	cmd := e.cp.KubectlCommand(t.Context(), "create", "-f", "-")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(manifest), &stdout, &stderr
	require.Error(t, cmd.Run(), "kubectl create refused")
	// kubectl prints the refusal as it prints the API server's own
	// validation errors, from the status's details.
	assert.Equal(t, `Warning: spec.size: more than 5 is wasteful
The Widget "big" is invalid: spec.size: Invalid value: 11: must be at most 10
`, stderr.String())

	_, err := e.dyn.Resource(widgetsV1).Namespace("default").Create(t.Context(), widgetObject(widgetV1, "big", map[string]any{"size": int64(11)}), metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	status, ok := errors.AsType[*apierrors.StatusError](err)
	require.True(t, ok)
	require.NotNil(t, status.ErrStatus.Details)
	require.Len(t, status.ErrStatus.Details.Causes, 1)
	assert.Equal(t, "spec.size", status.ErrStatus.Details.Causes[0].Field)
	assert.Equal(t, []string{"spec.size: more than 5 is wasteful"}, e.warnings.take())

	for _, policy := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
		_, err = e.kube.CoreV1().ConfigMaps("default").Create(t.Context(), configMap("up-"+strings.ToLower(string(policy)), policy), metav1.CreateOptions{})
		assert.True(t, apierrors.IsInvalid(err), "refused while the webhook is up, whatever its failurePolicy: %v", err)
	}

	_, err = e.dyn.Resource(widgetsV1).Namespace("default").Create(t.Context(), widgetObject(widgetV1, "wasteful", map[string]any{"size": int64(6)}), metav1.CreateOptions{})
	require.NoError(t, err, "admitted with a warning")
	assert.Equal(t, []string{"spec.size: more than 5 is wasteful"}, e.warnings.take())
}

func (e *webhookEnv) converted(t *testing.T) {
	ctx := t.Context()
	alpha := e.dyn.Resource(widgetsV1alpha1).Namespace("default")
	v1 := e.dyn.Resource(widgetsV1).Namespace("default")
	created, err := alpha.Create(ctx, widgetObject(widgetV1alpha1, "old", map[string]any{"size": int64(3), "colour": "green"}), metav1.CreateOptions{})
	require.NoError(t, err)

	got, err := v1.Get(ctx, "old", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, widgetV1, got.GetAPIVersion())
	assert.Equal(t, map[string]any{"size": int64(3), "color": "green"}, got.Object["spec"])
	assert.Equal(t, created.GetUID(), got.GetUID())

	require.NoError(t, unstructured.SetNestedField(got.Object, "yellow", "spec", "color"))
	_, err = v1.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	back, err := alpha.Get(ctx, "old", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"size": int64(3), "colour": "yellow"}, back.Object["spec"], "written as v1, read as v1alpha1")

	list, err := v1.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, list.Items)
	for _, item := range list.Items {
		assert.Equal(t, widgetV1, item.GetAPIVersion())
	}
}

// rotated replaces the serving certificate, the way the kubelet updates a
// mounted Secret (both files at once), while clients write Widgets through
// the API server on connections of their own.
func (e *webhookEnv) rotated(t *testing.T) {
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var writes, failures atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			cfg := e.cp.Config()
			cfg.WarningHandler = rest.NoWarnings{}
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, err)
				return
			}
			widgets := dyn.Resource(widgetsV1).Namespace("default")
			for i := 0; ctx.Err() == nil; i++ {
				_, err := widgets.Create(ctx, widgetObject(widgetV1, fmt.Sprintf("r-%d-%d", w, i), map[string]any{"size": int64(1)}), metav1.CreateOptions{})
				if ctx.Err() != nil {
					return
				}
				writes.Add(1)
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
			return cond(), nil
		}), what)
	}
	waitFor("writes flow", func() bool { return writes.Load() >= 20 })

	newDir := t.TempDir()
	e.ca.Issue(t, newDir, 2, time.Now().Add(time.Hour))
	for _, name := range []string{"tls.crt", "tls.key"} {
		// Renamed into place, as an atomic writer does.
		data, err := os.ReadFile(filepath.Join(newDir, name))
		require.NoError(t, err)
		tmp := filepath.Join(e.certDir, "."+name+".tmp")
		require.NoError(t, os.WriteFile(tmp, data, 0o600))
		require.NoError(t, os.Rename(tmp, filepath.Join(e.certDir, name)))
	}
	waitFor("the new certificate is served", func() bool { return e.servedSerial(t) == 2 })
	before := writes.Load()
	waitFor("writes go on", func() bool { return writes.Load() >= before+20 })
	stop()
	wg.Wait()
	assert.Zero(t, failures.Load(), "%d of %d writes failed; the first: %v", failures.Load(), writes.Load(), firstErr.Load())
	t.Logf("%d writes during the rotation, none failed", writes.Load())
	assert.Positive(t, metricstest.Value(t, e.reg, "controller_runtime_webhook_requests_total", map[string]string{"webhook": "/validate-widget", "code": "200"}))
}

// servedSerial is the serial number of the certificate the webhooks serve
// on a new connection.
func (e *webhookEnv) servedSerial(t *testing.T) int64 {
	t.Helper()
	conn, err := tls.Dial("tcp", e.addr, &tls.Config{RootCAs: e.ca.Pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		return 0
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// down stops the webhooks: with failurePolicy Fail a write they check is
// refused, with Ignore it passes unchecked, and objects stored in another
// version cannot be read.
func (e *webhookEnv) down(t *testing.T) {
	ctx := t.Context()
	e.stop()
	_, err := e.kube.CoreV1().ConfigMaps("default").Create(ctx, configMap("down-fail", admissionregistrationv1.Fail), metav1.CreateOptions{})
	require.Error(t, err, "failurePolicy Fail refuses")
	assert.Contains(t, err.Error(), `failed calling webhook "fail.configmaps.e2e.ctrlkit.io"`)
	_, err = e.kube.CoreV1().ConfigMaps("default").Create(ctx, configMap("down-ignore", admissionregistrationv1.Ignore), metav1.CreateOptions{})
	require.NoError(t, err, "failurePolicy Ignore admits, unchecked")

	_, err = e.dyn.Resource(widgetsV1).Namespace("default").Create(ctx, widgetObject(widgetV1, "while-down", map[string]any{"size": int64(1)}), metav1.CreateOptions{})
	require.Error(t, err, "a Widget cannot be written")
	_, err = e.dyn.Resource(widgetsV1).Namespace("default").Get(ctx, "old", metav1.GetOptions{})
	require.Error(t, err, "a stored v1alpha1 object cannot be read as v1 without the conversion webhook")
	assert.Contains(t, err.Error(), "conversion webhook")
}

// TestManagedWebhookCertificates runs the Widget's webhooks with
// certificates the operator issues itself: the API server trusts them once
// the operator has published its CA in the configurations and the CRD,
// and a second replica serves the certificate the first one issued.
func TestManagedWebhookCertificates(t *testing.T) {
	t.Parallel()
	env := newWebhookEnv(t)
	managed := func() *webhook.ManagedCertificates {
		m, err := webhook.NewManagedCertificates(env.managedConfig())
		require.NoError(t, err)
		return m
	}
	first := managed()
	env.start(t, first)
	env.install(t) // waits until the API server calls the webhooks

	secret, err := env.kube.CoreV1().Secrets("default").Get(t.Context(), managedSecret, metav1.GetOptions{})
	require.NoError(t, err)
	hooks, err := env.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), "widgets", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, secret.Data[webhook.SecretCAKey], hooks.Webhooks[0].ClientConfig.CABundle, "the CA is published")
	env.converted(t)

	second := managed()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- second.Run(ctx) }()
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), pollEvery, waitTimeout, true, func(context.Context) (bool, error) {
		a, errA := first.GetCertificate(nil)
		b, errB := second.GetCertificate(nil)
		return errA == nil && errB == nil && bytes.Equal(a.Certificate[0], b.Certificate[0]), nil
	}), "the second replica serves the first one's certificate")
	cancel()
	require.NoError(t, <-done)
}

// managedSecret is the Secret of the managed certificates' tests.
const managedSecret = "widget-webhook-tls"

// managedConfig is the ManagedConfig of the Widget's webhooks: a Secret in
// default, certificates for 127.0.0.1, the CA published in the
// configurations install creates and in the Widget CRD, checked every
// second.
func (e *webhookEnv) managedConfig() webhook.ManagedConfig {
	return webhook.ManagedConfig{
		Client: e.kube, Dynamic: e.dyn, Namespace: "default", Name: managedSecret,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		CABundles: webhook.CABundles{MutatingWebhookConfigurations: []string{"widgets"}, ValidatingWebhookConfigurations: []string{"widgets", "configmaps"},
			CRDs: []string{"widgets." + widgetGroup}},
		Check: time.Second,
	}
}
