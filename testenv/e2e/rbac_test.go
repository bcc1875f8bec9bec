package e2e

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	fooclientset "github.com/ctrlkit/ctrlkit/foo/generated/clientset/versioned"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
)

// TestLeastPrivilege runs examples/foo as its ServiceAccount, bound only to
// the roles of examples/foo/deploy/rbac.yaml (applied from the file as it
// is), with leader election in foo-system. The controller converges a Foo
// without a single denied request, while requests outside the roles with
// the same token are denied.
func TestLeastPrivilege(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	r := newRelRig(t, relOptions())
	ctx := t.Context()

	// The namespace, the ServiceAccount and the RBAC, from the manifests.
	var objs []any
	for _, file := range []string{"namespace.yaml", "serviceaccount.yaml", "role.yaml", "rbac.yaml"} {
		for _, o := range r.readManifest(file) {
			objs = append(objs, o)
			r.createObjects(o)
		}
	}
	var kinds []string
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			kinds = append(kinds, "ClusterRole/"+o.Name)
		case *rbacv1.ClusterRoleBinding:
			kinds = append(kinds, "ClusterRoleBinding/"+o.Name)
		case *rbacv1.Role:
			kinds = append(kinds, "Role/"+o.Namespace+"/"+o.Name)
		case *rbacv1.RoleBinding:
			kinds = append(kinds, "RoleBinding/"+o.Namespace+"/"+o.Name)
		case *corev1.Namespace:
			kinds = append(kinds, "Namespace/"+o.Name)
		case *corev1.ServiceAccount:
			kinds = append(kinds, "ServiceAccount/"+o.Namespace+"/"+o.Name)
		}
	}
	assert.Equal(t, []string{
		"Namespace/foo-system", "ServiceAccount/foo-system/foo-controller",
		"ClusterRole/foo-controller", "Role/foo-system/foo-controller",
		"ClusterRoleBinding/foo-controller", "RoleBinding/foo-system/foo-controller",
		"Role/foo-system/foo-controller-deployment", "RoleBinding/foo-system/foo-controller-deployment",
	}, kinds, "objects of examples/foo/deploy")

	cfg, err := r.cp.ServiceAccountConfig(ctx, controllerNamespace, controllerSA)
	require.NoError(t, err)

	t.Run("the token is signed by the API server's service account key", func(t *testing.T) {
		claims := relVerifyServiceAccountToken(t, r, cfg.BearerToken)
		assert.Equal(t, controllerUser, claims.Subject)
		assert.Equal(t, "https://kubernetes.default.svc.cluster.local", claims.Issuer)
		assert.Equal(t, controllerNamespace, claims.Kubernetes.Namespace)
		assert.Equal(t, controllerSA, claims.Kubernetes.ServiceAccount.Name)
		assert.InDelta(t, 3600, claims.Expiry-claims.IssuedAt, 1, "a one-hour token")

		review, err := r.kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: cfg.BearerToken},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.True(t, review.Status.Authenticated, "the API server accepts the token: %s", review.Status.Error)
		assert.Equal(t, controllerUser, review.Status.User.Username)

		// One changed character in the payload breaks the signature.
		parts := strings.Split(cfg.BearerToken, ".")
		require.Len(t, parts, 3)
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		require.NoError(t, err)
		forged := strings.Replace(string(payload), controllerSA, "foo-controllex", 1)
		require.NotEqual(t, string(payload), forged)
		parts[1] = base64.RawURLEncoding.EncodeToString([]byte(forged))
		review, err = r.kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: strings.Join(parts, ".")},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.False(t, review.Status.Authenticated, "a forged token is rejected")
	})

	r.waitAuthorized(cfg)
	kubeconfig := r.writeKubeconfig(cfg, controllerSA)
	ns := r.createNamespace("least")

	ctrl := r.startFoo(t, "foo as its ServiceAccount", kubeconfig,
		"--leader-elect", "--leader-elect-namespace="+relLeaseNamespace,
		"--resync=1m", "--workers=2", "--shutdown-timeout=10s")
	relWaitReadyz(t, ctrl)

	t.Run("it converges a Foo", func(t *testing.T) {
		f, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, relNewFoo("least", "least-web", 2), metav1.CreateOptions{})
		require.NoError(t, err)
		_, d := r.waitFooConverged(t, ns, f.Name, waitTimeout)
		assert.Equal(t, int32(2), d.Status.AvailableReplicas)
		// A correction is what the controller reports with a Normal event:
		// events are written with the ServiceAccount's permissions too.
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := r.kube.AppsV1().Deployments(ns).Get(ctx, d.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Replicas = ptr.To[int32](5)
			_, err = r.kube.AppsV1().Deployments(ns).Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var synced int
			for _, e := range r.fooEvents(c, ctx, ns, f.Name, corev1.EventTypeNormal) {
				if e.Reason == "Synced" && e.Source.Component == "foo-controller" {
					synced++
				}
			}
			assert.Positive(c, synced, "a Normal Synced event for the correction")
		}, waitTimeout, relPoll)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			d, err := r.kube.AppsV1().Deployments(ns).Get(ctx, d.Name, metav1.GetOptions{})
			require.NoError(c, err)
			assert.Equal(c, d.Generation, d.Status.ObservedGeneration)
			assert.Equal(c, []int32{2, 2, 2}, []int32{ptr.Deref(d.Spec.Replicas, 0), d.Status.Replicas, d.Status.AvailableReplicas})
		}, waitTimeout, relPoll, "the corrected Deployment settles at 2 replicas")
		lease, err := r.kube.CoordinationV1().Leases(relLeaseNamespace).Get(ctx, relLeaseName, metav1.GetOptions{})
		require.NoError(t, err)
		assert.NotEmpty(t, ptr.Deref(lease.Spec.HolderIdentity, ""), "the Lease in %s has a holder", relLeaseNamespace)
	})

	t.Run("requests outside the roles are denied", func(t *testing.T) {
		probe := rest.CopyConfig(cfg)
		probe.UserAgent = "ctrlkit-e2e-probe"
		kube, err := kubernetes.NewForConfig(probe)
		require.NoError(t, err)
		foos, err := fooclientset.NewForConfig(probe)
		require.NoError(t, err)

		// A pod of no ReplicaSet, which nothing but the probe tries to
		// delete (a Deployment's pods come and go with its rollouts).
		bare, err := r.kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "bystander"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		pod := bare.Name

		denied := []struct {
			name string
			do   func() error
		}{
			{"delete a Pod", func() error { return kube.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{}) }},
			{"list Pods", func() error { _, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); return err }},
			{"list Secrets in the namespace", func() error { _, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); return err }},
			{"list Secrets everywhere", func() error { _, err := kube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); return err }},
			{"get a Secret", func() error {
				_, err := kube.CoreV1().Secrets(relLeaseNamespace).Get(ctx, "any", metav1.GetOptions{})
				return err
			}},
			{"update a Deployment (only patch)", func() error {
				_, err := kube.AppsV1().Deployments(ns).Update(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "least-web"}}, metav1.UpdateOptions{})
				return err
			}},
			{"scale a Deployment", func() error {
				_, err := kube.AppsV1().Deployments(ns).GetScale(ctx, "least-web", metav1.GetOptions{})
				return err
			}},
			{"create a ReplicaSet", func() error {
				_, err := kube.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
				return err
			}},
			{"create a Foo", func() error {
				_, err := foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, relNewFoo("intruder", "intruder", 1), metav1.CreateOptions{})
				return err
			}},
			{"update a Foo's spec", func() error {
				f, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "least", metav1.GetOptions{})
				if err != nil {
					return err
				}
				f.Spec.Replicas = ptr.To[int32](3)
				_, err = foos.SamplecontrollerV1alpha1().Foos(ns).Update(ctx, f, metav1.UpdateOptions{})
				return err
			}},
			{"delete a Foo", func() error {
				return foos.SamplecontrollerV1alpha1().Foos(ns).Delete(ctx, "least", metav1.DeleteOptions{})
			}},
			// The Role allows what leader election and sharding do (get, list,
			// watch, create, update, delete), not patch, nor deleting every
			// Lease at once.
			{"delete every Lease", func() error {
				return kube.CoordinationV1().Leases(relLeaseNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			}},
			{"patch the Lease", func() error {
				_, err := kube.CoordinationV1().Leases(relLeaseNamespace).Patch(ctx, relLeaseName, types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
				return err
			}},
			{"get a Lease in another namespace", func() error {
				_, err := kube.CoordinationV1().Leases("kube-node-lease").Get(ctx, "kwok-node-0", metav1.GetOptions{})
				return err
			}},
			{"delete an Event", func() error {
				return kube.CoreV1().Events(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			}},
			{"bind itself to cluster-admin", func() error {
				_, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: "escalate"},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
					Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: controllerNamespace, Name: controllerSA}},
				}, metav1.CreateOptions{})
				return err
			}},
		}
		for _, tt := range denied {
			err := tt.do()
			assert.True(t, apierrors.IsForbidden(err), "%s: want 403 Forbidden, got %v", tt.name, err)
		}
		_, err = r.kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		assert.NoError(t, err, "the Pod is still there")

		events := r.auditLog()
		probes := audit.Select(events, audit.ByUser(controllerUser), relByUserAgent(probe.UserAgent))
		assert.Len(t, probes, len(denied), "one audited request per probe: %v", audit.Lines(probes))
		for _, e := range probes {
			assert.Equal(t, 403, e.Code, "%s", e)
		}
	})

	stopping := time.Now()
	relTerminate(t, ctrl, 20*time.Second)
	lease, err := r.kube.CoordinationV1().Leases(relLeaseNamespace).Get(ctx, relLeaseName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, ptr.Deref(lease.Spec.HolderIdentity, ""), "the Lease is released on SIGTERM")
	relAssertNoDataRace(t, ctrl)

	events := r.auditLog()
	own := audit.Select(events, audit.ByUser(controllerUser), relByUserAgent(relFooUserAgent))
	require.NotEmpty(t, own)
	var failed []audit.Event
	for _, e := range own {
		if e.Code == 401 || e.Code == 403 {
			failed = append(failed, e)
		}
	}
	assert.Empty(t, audit.Lines(failed), "the roles of rbac.yaml allow every request of the controller")
	t.Logf("the controller's %d requests as %s: %s", len(own), controllerUser, audit.FormatTally(audit.Tally(own)))
	assert.Zero(t, audit.Count(events, audit.ByUser(controllerUser), audit.Writes(), audit.Since(stopping),
		audit.ByResource("apps", "deployments")), "no Deployment write after SIGTERM")
	t.Logf("done after %s", time.Since(begin).Round(time.Millisecond))
}

// relTokenClaims are the claims of a ServiceAccount token the test checks.
type relTokenClaims struct {
	Issuer     string `json:"iss"`
	Subject    string `json:"sub"`
	IssuedAt   int64  `json:"iat"`
	Expiry     int64  `json:"exp"`
	Kubernetes struct {
		Namespace      string `json:"namespace"`
		ServiceAccount struct {
			Name string `json:"name"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io"`
}

// relVerifyServiceAccountToken checks the RS256 signature of a JWT against
// the keys the API server publishes at /openid/v1/jwks and returns its
// claims.
func relVerifyServiceAccountToken(t *testing.T, r *relRig, token string) relTokenClaims {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3, "a JWT has three parts")
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	relDecodeSegment(t, parts[0], &header)
	require.Equal(t, "RS256", header.Alg)

	raw, err := r.kube.CoreV1().RESTClient().Get().AbsPath("/openid/v1/jwks").DoRaw(t.Context())
	require.NoError(t, err, "%s", raw)
	var jwks struct {
		Keys []struct {
			Kid string `json:"kid"`
			Kty string `json:"kty"`
			N   string `json:"n"`
			E   string `json:"e"`
		} `json:"keys"`
	}
	require.NoError(t, json.Unmarshal(raw, &jwks))
	var key *rsa.PublicKey
	for _, k := range jwks.Keys {
		if k.Kid != header.Kid || k.Kty != "RSA" {
			continue
		}
		n, err := base64.RawURLEncoding.DecodeString(k.N)
		require.NoError(t, err)
		e, err := base64.RawURLEncoding.DecodeString(k.E)
		require.NoError(t, err)
		key = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	require.NotNil(t, key, "the API server publishes key %q", header.Kid)

	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	require.NoError(t, err)
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	require.NoError(t, rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig), "signature")

	var claims relTokenClaims
	relDecodeSegment(t, parts[1], &claims)
	return claims
}

func relDecodeSegment(t *testing.T, seg string, into any) {
	t.Helper()
	data, err := base64.RawURLEncoding.DecodeString(seg)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, into))
}
