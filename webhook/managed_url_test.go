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
func TestManagedCertificatesLeaveURLWebhooksOfMixedConfiguration(t *testing.T) {
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

// An operator that runs outside the cluster is called at a URL of a host
// its serving certificate is made for: those webhooks are its own and get
// its CA; a URL of any other host keeps its caBundle.
func TestManagedCertificatesPublishIntoURLsOfTheirHosts(t *testing.T) {
	for _, tc := range []struct {
		url  string
		ours bool
	}{
		{url: "https://127.0.0.1:9443/validate", ours: true},
		{url: "https://SVC.ns.svc/validate", ours: true},
		{url: "https://127.0.0.2:9443/validate", ours: false},
		{url: "https://svc.other.svc/validate", ours: false},
		{url: "://not a url", ours: false},
	} {
		t.Run(tc.url, func(t *testing.T) {
			e := newManagedEnv()
			v, err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), "v", metav1.GetOptions{})
			require.NoError(t, err)
			v.Webhooks = append(v.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: "at-url.example.com",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &tc.url}})
			_, err = e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(t.Context(), v, metav1.UpdateOptions{})
			require.NoError(t, err)

			require.NoError(t, e.certificates(t).sync(t.Context()))

			v, err = e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), "v", metav1.GetOptions{})
			require.NoError(t, err)
			require.NotEmpty(t, v.Webhooks[0].ClientConfig.CABundle, "the webhook called at the Service gets the CA")
			require.Equal(t, tc.ours, len(v.Webhooks[1].ClientConfig.CABundle) > 0, "the CA in the webhook called at %s", tc.url)
		})
	}
}

// The API server calls a webhook of a Service at the host
// <name>.<namespace>.svc: a webhook of a configuration the operator
// publishes into that calls another Service (another team's, in a
// configuration shared by several servers) is called at a host the
// operator's certificate is not made for, and keeps its own caBundle.
func TestManagedCertificatesLeaveWebhooksOfAnotherService(t *testing.T) {
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
