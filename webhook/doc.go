// Package webhook serves an operator's admission and conversion webhooks
// for plain client-go types: typed validating and defaulting handlers for
// any API type, a CRD conversion webhook through a hub version, and the
// HTTPS server they share, with certificates reloaded from disk when they
// are renewed or issued, renewed and published by the operator itself.
//
// A validator returns field errors and warnings, which clients see as they
// see the API server's own; a defaulter changes the object, and the API
// server receives a JSON patch of what it changed:
//
//	validate, err := webhook.Validating(func(ctx context.Context, req webhook.Request[*appsv1.Deployment]) ([]string, field.ErrorList) {
//		if r := req.Object.Spec.Replicas; r != nil && *r > 10 {
//			return nil, field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), *r, "must be at most 10")}
//		}
//		return nil, nil
//	})
//	if err != nil {
//		return err
//	}
//	certs, err := webhook.NewCertFiles("/tls/tls.crt", "/tls/tls.key")
//	if err != nil {
//		return err
//	}
//	server, err := webhook.NewServer(":9443", certs, webhook.Handle("/validate-deployment", validate))
//	if err != nil {
//		return err
//	}
//	return operator.Run(ctx, operator.WithWebhooks(server), operator.WithControllers(ctrl))
//
// An operator built with queue/operator's Flags gets its server from
// Flags.Webhooks, at --webhook-bind-address with the certificate of
// --webhook-cert-dir, or with certificates it issues itself when
// Flags.WebhookCertificates is set to NewManagedCertificates' (see
// examples/bucket, which does both).
//
// A defaulter's patch carries numbers exactly as its Go type encodes them,
// so an int64 beyond 2^53 reaches the API server unrounded. A CONNECT
// request (pods/exec, pods/attach, pods/portforward and the like) carries
// the options of the connection, not an object: a validator gets it with
// a nil Object and the options undecoded in Request.Admission, and a
// defaulter is not called.
//
// WithTLSConfig changes the server's TLS configuration (minimum version,
// cipher suites, client certificates required) after its defaults; the
// certificate is always the one of its Certificates.
//
// Bad requests (not a POST of JSON, larger than MaxRequestBytes, not an
// AdmissionReview or ConversionReview, an object of another kind or that
// does not decode) are refused with the reason, never with a panic; a
// panic of the caller's function refuses its request as an internal error.
//
// Package webhooktest calls the handlers without a server, applies the
// patches they answer with, round-trips fuzzed objects through a
// conversion webhook, and issues test certificates.
package webhook
