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
//		if req.Object == nil { // a DELETE: nothing to check
//			return nil, nil
//		}
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
// --webhook-cert-dir, or with a certificate it issues itself (through
// NewManagedCertificates) when Flags.WebhookCertSecret is set
// (--webhook-cert-secret; see examples/bucket, which does both).
//
// A defaulter's patch carries numbers exactly as its Go type encodes them,
// so an int64 beyond 2^53 reaches the API server unrounded. A validator
// gets a DELETE with the object in OldObject and a nil Object.
//
// A CONNECT request (pods/exec, pods/attach, pods/portforward and the
// like) carries the options of the connection, not an object, and the
// API server sends it with the options' kind: PodExecOptions for
// pods/exec. A validator gets it with a nil Object and the options
// undecoded in Request.Admission: a validator of the options' type
// (Validating[*corev1.PodExecOptions]) always, a validator of the
// object's type (Validating[*corev1.Pod]) only if made WithConnect. A
// validating handler of the object's type not made WithConnect refuses
// every CONNECT, its message naming WithConnect: it never admits one
// unchecked. A defaulter is not called for a CONNECT, which its handler
// admits unchanged.
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
//
// # Certificates the operator issues itself
//
// NewManagedCertificates keeps a CA and a serving pair it signs in a
// Secret that every replica shares, and that CA as the caBundle of the
// webhook configurations and CRDs it names (of a configuration, only of its
// webhooks that call the operator: a clientConfig with a service and no
// url, or a url whose host the serving certificate is made for; one called
// at another host is someone else's and keeps its caBundle). A pass of its Run, every
// Check, reads those objects and the Secret, renews what needs it,
// writes the Secret's ca.crt as each object's caBundle, and loads the
// Secret's pair. It guarantees:
//
//   - What a replica serves is trusted. A CA leaves ca.crt, and so the
//     caBundles, only once it has expired or once no certificate it
//     signed can still be served: a Validity (plus an hour for clocks
//     that differ) after a pass first found it no longer signing, and not
//     before the certificate any replica serves from it expires. Until
//     then ca.crt keeps, beside the CA that signs, every CA of the old
//     ca.crt, of the certificate each replica serves and of the caBundles
//     of the named objects, with the time it may leave recorded in the
//     Secret's AnnotationTrustedCAs. This holds for replicas that share
//     one Validity.
//   - A pair signed by the CA already served (a renewal, or a pair
//     reissued for more names) is served at the pass that loads it,
//     whatever publishing does.
//   - A pair of another CA is served only after two passes in a row, a
//     Check apart, found that CA in the caBundle of every named object
//     that exists; or, failing that, when the pair served expires before
//     the next pass.
//   - A replica is not Ready before a pass found the CA of the pair it
//     serves in every caBundle of the named objects that exist, and stays
//     Ready while later passes fail to publish.
//   - A Secret deleted is created again, and one whose CA or its key no
//     longer loads is given a new CA; the old CA stays trusted as above,
//     known from the caBundles and from each replica's certificate, and
//     each replica moves to the new CA's pair as above: while the named
//     objects can be written, and the API server takes up a caBundle
//     within a Check, no request to a Ready replica fails for want of
//     trust on the way.
//   - Each object is published on its own: one that does not exist, or
//     that the replica may not read or write, is reported at each pass
//     and leaves the others alone. One that does not exist holds nothing
//     back; one that cannot be read or written holds back a move to
//     another CA (and a replica's first Ready) until it has the CA. A
//     CRD whose conversion strategy is not Webhook is left unchanged and
//     reported once.
//   - A pair is kept if it is valid for this replica's names, whatever
//     others it has; one that lacks a name is reissued for its names and
//     this replica's, so that replicas with different names (during a
//     rolling update) agree on one pair after one reissue.
package webhook
