package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/webhook"
	"github.com/ctrlkit/ctrlkit/webhook/webhooktest"
)

// The files of an operator's webhooks that apigen -webhook generates.
const (
	webhookManifest    = "webhook.yaml"
	conversionManifest = "crd-conversion.yaml"
)

// InstalledWebhooks are the webhooks InstallWebhooks installed.
type InstalledWebhooks struct {
	// Paths are the paths the API server calls at the address, sorted.
	Paths []string

	cp                   *ControlPlane
	mutating, validating []string
	crds                 []string
}

// InstallWebhooks installs the webhooks of an operator whose manifests
// apigen generated into dir (webhook.yaml, and crd-conversion.yaml if it
// is there) with the API server calling them at addr (host:port) instead
// of their Service: the mutating and validating configurations are
// created, or replaced if they exist, and each CRD of crd-conversion.yaml,
// which must be installed already, is patched to convert through its
// webhook. caBundle, a PEM certificate, is set as the caBundle of each of
// them; nil leaves it to the operator to publish its CA
// (--webhook-cert-secret). Webhooks called at a URL are installed as they
// are.
func (cp *ControlPlane) InstallWebhooks(ctx context.Context, dir, addr string, caBundle []byte) (*InstalledWebhooks, error) {
	objs, err := ReadObjects(filepath.Join(dir, webhookManifest))
	if err != nil {
		return nil, fmt.Errorf("controlplane: InstallWebhooks: %w", err)
	}
	conversions, err := readConversions(filepath.Join(dir, conversionManifest))
	if err != nil {
		return nil, fmt.Errorf("controlplane: InstallWebhooks: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cp.Config())
	if err != nil {
		return nil, err
	}
	installed := &InstalledWebhooks{cp: cp}
	paths := map[string]bool{}
	atAddr := func(cc *admissionregistrationv1.WebhookClientConfig) {
		if cc.Service == nil {
			return
		}
		path := ""
		if cc.Service.Path != nil {
			path = *cc.Service.Path
		}
		paths[path] = true
		url := "https://" + addr + path
		cc.URL, cc.Service, cc.CABundle = &url, nil, caBundle
	}
	for _, obj := range objs {
		switch o := obj.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			for i := range o.Webhooks {
				atAddr(&o.Webhooks[i].ClientConfig)
			}
			client := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
			_, err = client.Create(ctx, o, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = replace(ctx, o, client.Get, client.Update)
			}
			installed.mutating = append(installed.mutating, o.Name)
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			for i := range o.Webhooks {
				atAddr(&o.Webhooks[i].ClientConfig)
			}
			client := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
			_, err = client.Create(ctx, o, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = replace(ctx, o, client.Get, client.Update)
			}
			installed.validating = append(installed.validating, o.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("controlplane: InstallWebhooks: %w", errors.Join(err, installed.Uninstall(context.WithoutCancel(ctx))))
		}
	}
	dyn, err := dynamic.NewForConfig(cp.Config())
	if err != nil {
		return nil, err
	}
	crdClient := dyn.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	for _, crd := range conversions {
		w := crd.Spec.Conversion.Webhook
		if w == nil || w.ClientConfig == nil || w.ClientConfig.Service == nil {
			return nil, fmt.Errorf("controlplane: InstallWebhooks: %s: the conversion of %s has no webhook Service",
				conversionManifest, crd.Name)
		}
		path := ""
		if w.ClientConfig.Service.Path != nil {
			path = *w.ClientConfig.Service.Path
		}
		paths[path] = true
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{
			"strategy": apiextensionsv1.WebhookConverter,
			"webhook": map[string]any{
				"conversionReviewVersions": w.ConversionReviewVersions,
				"clientConfig":             map[string]any{"service": nil, "url": "https://" + addr + path, "caBundle": caBundle},
			},
		}}})
		if err != nil {
			return nil, err
		}
		if _, err := crdClient.Patch(ctx, crd.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				err = fmt.Errorf("%w: install the CRDs first (Options.CRDs, InstallCRDs)", err)
			}
			return nil, fmt.Errorf("controlplane: InstallWebhooks: the conversion of %s: %w", crd.Name,
				errors.Join(err, installed.Uninstall(context.WithoutCancel(ctx))))
		}
		installed.crds = append(installed.crds, crd.Name)
	}
	for p := range paths {
		installed.Paths = append(installed.Paths, p)
	}
	slices.Sort(installed.Paths)
	return installed, nil
}

// replace updates the object of o's name to o.
func replace[T interface {
	*O
	metav1.Object
}, O any](ctx context.Context, o T, get func(context.Context, string, metav1.GetOptions) (T, error), update func(context.Context, T, metav1.UpdateOptions) (T, error)) error {
	cur, err := get(ctx, o.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	o.SetResourceVersion(cur.GetResourceVersion())
	_, err = update(ctx, o, metav1.UpdateOptions{})
	return err
}

// Uninstall deletes the webhook configurations InstallWebhooks created and
// turns the conversion of its CRDs back to None, so that the API server
// calls nothing at the address any more.
func (w *InstalledWebhooks) Uninstall(ctx context.Context) error {
	kube, err := kubernetes.NewForConfig(w.cp.Config())
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(w.cp.Config())
	if err != nil {
		return err
	}
	var errs []error
	ignoreNotFound := func(err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	for _, name := range w.mutating {
		ignoreNotFound(kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}))
	}
	for _, name := range w.validating {
		ignoreNotFound(kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}))
	}
	none := []byte(`{"spec":{"conversion":{"strategy":"None","webhook":null}}}`)
	for _, name := range w.crds {
		_, err := dyn.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")).
			Patch(ctx, name, types.MergePatchType, none, metav1.PatchOptions{})
		ignoreNotFound(err)
	}
	return errors.Join(errs...)
}

// readConversions reads the CRD patches of crd-conversion.yaml; none if
// the file does not exist.
func readConversions(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	docs, err := readDocuments(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, doc := range docs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := utilyaml.Unmarshal(doc, crd); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		if crd.Name == "" {
			continue // a document of only comments
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Spec.Conversion == nil {
			return nil, fmt.Errorf("%s: %s %q is not a CRD's conversion", path, crd.Kind, crd.Name)
		}
		out = append(out, crd)
	}
	return out, nil
}

// ServeWebhooks serves the webhooks that opts give (webhook.Handle, as to
// webhook.NewServer) on 127.0.0.1 behind TLS, with a certificate of a CA
// of its own, and installs the webhooks of the manifests apigen generated
// into dir so that the API server calls them there with that CA
// (InstallWebhooks). It fails t if a path of the manifests is not served.
// When the test ends, the webhooks are uninstalled and the server stopped.
// It returns the server's address.
func ServeWebhooks(t testing.TB, cp *ControlPlane, dir string, opts ...webhook.Option) string {
	t.Helper()
	ca := webhooktest.NewCA(t)
	certFile, keyFile := ca.Issue(t, t.TempDir(), 2, time.Now().Add(23*time.Hour))
	certs, err := webhook.NewCertFiles(certFile, keyFile)
	if err != nil {
		t.Fatalf("controlplane: ServeWebhooks: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("controlplane: ServeWebhooks: %v", err)
	}
	srv, err := webhook.NewServer(ln.Addr().String(), certs, opts...)
	if err != nil {
		_ = ln.Close()
		t.Fatalf("controlplane: ServeWebhooks: %v", err)
	}
	hs := &http.Server{Handler: srv.Handler(), TLSConfig: srv.TLSConfig(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("controlplane: ServeWebhooks: serving: %v", err)
		}
	})
	installed, err := cp.InstallWebhooks(t.Context(), dir, srv.Addr(), ca.PEM)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := installed.Uninstall(context.Background()); err != nil {
			t.Errorf("controlplane: ServeWebhooks: uninstalling: %v", err)
		}
	})
	var missing []string
	for _, p := range installed.Paths {
		if !slices.Contains(srv.Paths(), p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("controlplane: ServeWebhooks: the manifests of %s call %q, which no webhook.Handle option serves", dir, missing)
	}
	return srv.Addr()
}
