package webhook_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/reconcile"
	"github.com/ctrlkit/ctrlkit/webhook"
)

// runWebhooks is the package documentation's example.
func runWebhooks(ctx context.Context, ctrl *queue.Controller[cache.ObjectName]) error {
	validate, err := webhook.Validating(func(ctx context.Context, req webhook.Request[*appsv1.Deployment]) ([]string, field.ErrorList) {
		if req.Object == nil { // a DELETE: nothing to check
			return nil, nil
		}
		if r := req.Object.Spec.Replicas; r != nil && *r > 10 {
			return nil, field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), *r, "must be at most 10")}
		}
		return nil, nil
	})
	if err != nil {
		return err
	}
	certs, err := webhook.NewCertFiles("/tls/tls.crt", "/tls/tls.key")
	if err != nil {
		return err
	}
	server, err := webhook.NewServer(":9443", certs, webhook.Handle("/validate-deployment", validate))
	if err != nil {
		return err
	}
	return operator.Run(ctx, operator.WithWebhooks(server), operator.WithControllers(ctrl))
}

func Example() {
	ctrl, err := queue.New("deployments", reconcile.Func[cache.ObjectName](func(context.Context, cache.ObjectName) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	// The certificate files do not exist here.
	fmt.Println(runWebhooks(ctx, ctrl) != nil)
	// Output: true
}

// A defaulter changes the object; the API server gets a JSON patch.
func ExampleMutating() {
	h, err := webhook.Mutating(func(ctx context.Context, req webhook.Request[*appsv1.Deployment]) error {
		if req.Object.Spec.Replicas == nil {
			one := int32(1)
			req.Object.Spec.Replicas = &one
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1",
		"kind":{"group":"apps","version":"v1","kind":"Deployment"},"operation":"CREATE",
		"object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{}}}}`
	r := httptest.NewRequest(http.MethodPost, "/mutate-deployment", strings.NewReader(review))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		panic(err)
	}
	fmt.Println(out.Response.Allowed, *out.Response.PatchType, string(out.Response.Patch))
	// Output: true JSONPatch [{"op":"add","path":"/spec/replicas","value":1}]
}

// A cluster's policy may ask for TLS 1.3 and for the API server's client
// certificate; the certificate served stays the one of NewCertFiles.
func ExampleWithTLSConfig() {
	validate, err := webhook.Validating(func(context.Context, webhook.Request[*appsv1.Deployment]) ([]string, field.ErrorList) {
		return nil, nil
	})
	if err != nil {
		panic(err)
	}
	apiServerCAs := x509.NewCertPool() // the CA of the API server's client certificate
	server, err := webhook.NewServer(":9443", certificates{}, webhook.Handle("/validate-deployment", validate),
		webhook.WithTLSConfig(func(c *tls.Config) {
			c.MinVersion = tls.VersionTLS13
			c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, apiServerCAs
		}))
	if err != nil {
		panic(err)
	}
	cfg := server.TLSConfig()
	fmt.Println(cfg.MinVersion == tls.VersionTLS13, cfg.ClientAuth, cfg.GetCertificate != nil)
	// Output: true RequireAndVerifyClientCert true
}

// certificates stands for NewCertFiles' in the examples.
type certificates struct{}

func (certificates) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return nil, errors.New("no certificate in an example")
}
