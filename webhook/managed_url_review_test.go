package webhook

import (
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A configuration apigen names in CABundles because one of its webhooks is
// called at the operator's Service may also hold a webhook called at a URL
// (+kubebuilder:webhook url=...): that one is served by someone else, with
// a certificate the system roots trust (no caBundle). Publishing the
// operator's CA into it makes the API server trust only the operator's CA
// for that URL, and the call fails.
func TestReviewManagedCertificatesLeaveURLWebhooksOfMixedConfiguration(t *testing.T) {
	e := newManagedEnv()
	url := "https://hooks.example.com/validate"
	v, err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), "v", metav1.GetOptions{})
	require.NoError(t, err)
	v.Webhooks = append(v.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: "external.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}})
	_, err = e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(t.Context(), v, metav1.UpdateOptions{})
	require.NoError(t, err)

	m := e.certificates(t)
	require.NoError(t, m.sync(t.Context()))

	v, err = e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), "v", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, v.Webhooks[0].ClientConfig.CABundle, "the webhook called at the Service gets the CA")
	require.True(t, len(v.Webhooks[1].ClientConfig.CABundle) == 0,
		"the webhook called at %s (not the operator's server) got the operator's CA as its caBundle: the API server no longer trusts the URL's certificate", url)
}
