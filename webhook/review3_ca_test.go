package webhook

import (
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The API server calls a webhook of a Service at the host
// <name>.<namespace>.svc and verifies its certificate against the
// caBundle. Since 2a4acee a URL webhook is the operator's only if its host
// is one the serving certificate is made for, "a webhook of the same
// configuration called at another host is served by someone else and
// keeps its caBundle" (CABundles). A webhook of the same configuration
// called at another Service (another team's, as in a configuration shared
// by several servers) is called at another host too, but still gets the
// operator's CA: the API server then rejects that server's certificate and
// every call to it fails.
func TestReview3ManagedCertificatesLeaveWebhooksOfAnotherService(t *testing.T) {
	e := newManagedEnv()
	v, err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), "v", metav1.GetOptions{})
	require.NoError(t, err)
	theirs := []byte("-----BEGIN CERTIFICATE-----\ntheirs\n-----END CERTIFICATE-----\n")
	v.Webhooks = append(v.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: "other.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: "other-team", Name: "their-webhook"},
			CABundle: theirs}})
	_, err = e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(t.Context(), v, metav1.UpdateOptions{})
	require.NoError(t, err)

	// The certificate is made for svc.ns.svc (and 127.0.0.1), not for
	// their-webhook.other-team.svc.
	require.NoError(t, e.certificates(t).sync(t.Context()))

	v, err = e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), "v", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, v.Webhooks[0].ClientConfig.CABundle, "the webhook called at the operator's Service gets the CA")
	require.Equal(t, string(theirs), string(v.Webhooks[1].ClientConfig.CABundle),
		"the webhook called at the Service their-webhook.other-team.svc, a host the operator's certificate is not made for, "+
			"had its caBundle replaced by the operator's CA: the API server no longer trusts that server's certificate")
}
