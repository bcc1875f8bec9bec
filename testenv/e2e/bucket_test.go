package e2e

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	storagev1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1"
	storagev1alpha1 "github.com/ctrlkit/ctrlkit/examples/bucket/apis/storage/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/bucket/generated/clientset/versioned"
	bucketclient "github.com/ctrlkit/ctrlkit/examples/bucket/generated/clientset/versioned/typed/storage/v1"
	"github.com/ctrlkit/ctrlkit/examples/bucket/store"
	"github.com/ctrlkit/ctrlkit/testenv/audit"
	"github.com/ctrlkit/ctrlkit/testenv/controlplane"
	"github.com/ctrlkit/ctrlkit/testenv/internal/repo"
)

const (
	// The bucket operator runs as the ServiceAccount of examples/bucket/deploy,
	// with leader election on its Lease there.
	bkNamespace = "bucket-system"
	bkSA        = "bucket-operator"
	bkUser      = "system:serviceaccount:" + bkNamespace + ":" + bkSA
	bkLease     = "bucket-operator"
	// bkUserAgent is the user agent of the operator's requests; it tells
	// them apart from the test's probes with the same credentials.
	bkUserAgent = "ctrlkit-bucket"
	// bkResync is the operator's --resync: short, so that the periodic
	// check runs several times during the test.
	bkResync = 2 * time.Second
	// bkEventNamespace is where the event recorder writes the events about
	// a cluster-scoped object such as a Bucket.
	bkEventNamespace = metav1.NamespaceDefault
	// bkCertSecret is the operator's --webhook-cert-secret, the one its
	// RBAC allows.
	bkCertSecret = bkNamespace + "/bucket-webhook-certs"
	// bkDefaultRegion is the operator's --default-region.
	bkDefaultRegion = "eu-west-1"
)

// bkRegions is the operator's --regions: those of the test's Buckets.
var bkRegions = []string{"eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "sa-east-1"}

// bkSuite is the state the steps of TestBucketOperator share: one control
// plane, one store (restarted on the same address with the same data file)
// and one operator at a time.
type bkSuite struct {
	t           *testing.T
	cp          *controlplane.ControlPlane
	root        string
	operatorBin string
	storeBin    string
	kubeconfig  string
	kube        kubernetes.Interface
	buckets     bucketclient.BucketInterface
	// alpha is the Buckets' client of version v1alpha1, which the
	// operator's conversion webhook serves.
	alpha dynamic.ResourceInterface
	// webhookAddr is where every run of the operator serves its webhooks,
	// which the API server calls at that address.
	webhookAddr string
	// store is a client of the store at storeAddr, which every run of the
	// store listens on; dataFile keeps the buckets across runs.
	store     *store.Client
	storeAddr string
	dataFile  string
	// storeProc and operator are the processes running now; procs are all
	// that were started.
	storeProc *process
	operator  *process
	procs     []*process
}

// TestBucketOperator runs examples/bucket and its storage service
// (examples/bucket/store/cmd/bucketstore) as processes against a full
// control plane. The operator authenticates as the ServiceAccount of
// examples/bucket/deploy with exactly its RBAC and elects a leader on its
// Lease, as the Deployment there does. The steps depend on each other and
// run in order; the first one to fail ends the test, and the output of
// every process is printed.
func TestBucketOperator(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	root, err := repo.Root()
	require.NoError(t, err)
	waitOperator := buildInBackground(t, root, "bucket", true)
	waitStore := buildInBackground(t, root, "bucket/store/cmd/bucketstore", true)
	cp := controlplane.StartT(t, controlplane.Options{
		Size: controlplane.Full,
		CRDs: []string{filepath.Join(root, "examples", "bucket", "deploy", "crd")},
	})
	s := &bkSuite{t: t, cp: cp, root: root, operatorBin: waitOperator(), storeBin: waitStore()}
	t.Logf("control plane and binaries ready after %s", time.Since(begin).Round(time.Millisecond))
	s.setUp()

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"the store and the operator start", s.start},
		{"a new Bucket is created in the store and gets Ready", s.create},
		{"the webhooks default, refuse and convert Buckets, and Retain keeps a bucket", s.webhooks},
		{"a spec change reaches the store", s.specChange},
		{"a bucket changed or removed behind the operator's back is restored", s.restore},
		{"deleting a Bucket deletes its bucket before the Bucket goes", s.delete},
		{"while the store is down a deletion waits with the finalizer", s.storeDownDuringDeletion},
		{"an operator killed in the middle of a cleanup finishes it after its restart", s.killMidCleanup},
		{"a bucket the operator did not create is refused, untouched, and left by the deletion", s.foreignBucket},
		{"the store holds the buckets of the Buckets that exist, and nothing else", s.nothingLeaked},
		{"SIGTERM stops the operator and the store", s.sigterm},
	}
	for _, step := range steps {
		if !t.Run(step.name, step.run) {
			t.FailNow()
		}
	}

	events, err := cp.AuditEvents()
	require.NoError(t, err)
	mine := audit.Select(events, audit.ByUser(bkUser), relByUserAgent(bkUserAgent))
	assert.NotEmpty(t, mine, "the audit log holds the operator's requests")
	assert.Empty(t, audit.Lines(audit.Select(mine, audit.ByCode(403))), "the RBAC of examples/bucket/deploy allows every request of the operator")
	t.Logf("the operator's writes: %s", audit.FormatTally(audit.Tally(audit.Select(mine, audit.Writes()))))
	t.Logf("done after %s", time.Since(begin).Round(time.Millisecond))
}

// setUp applies the operator's namespace, ServiceAccount and RBAC from
// examples/bucket/deploy, writes a kubeconfig for the ServiceAccount and
// chooses the store's address and data file.
func (s *bkSuite) setUp() {
	t := s.t
	ctx := t.Context()
	admin := s.cp.Config()
	admin.QPS, admin.Burst = 1000, 1000
	var err error
	s.kube, err = kubernetes.NewForConfig(admin)
	require.NoError(t, err)
	client, err := versioned.NewForConfig(admin)
	require.NoError(t, err)
	s.buckets = client.StorageV1().Buckets()

	for _, file := range []string{"namespace.yaml", "serviceaccount.yaml", "role.yaml", "rbac.yaml"} {
		path := filepath.Join(s.root, "examples", "bucket", "deploy", file)
		objs, err := controlplane.ReadObjects(path)
		require.NoError(t, err)
		require.NoError(t, controlplane.CreateObjects(ctx, s.kube, objs...), "%s", path)
	}
	cfg, err := s.cp.ServiceAccountConfig(ctx, bkNamespace, bkSA)
	require.NoError(t, err)
	asOperator, err := versioned.NewForConfig(cfg)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := asOperator.StorageV1().Buckets().List(ctx, metav1.ListOptions{Limit: 1})
		assert.NoError(c, err)
	}, waitTimeout, pollEvery, "the operator's RBAC takes effect")
	s.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, controlplane.WriteKubeconfig(s.kubeconfig, cfg, bkSA))

	s.storeAddr = freeAddress(t)
	s.dataFile = filepath.Join(t.TempDir(), "buckets.json")
	s.store = store.NewClient("http://"+s.storeAddr, nil)
	s.installWebhooks(t)
}

// installWebhooks installs the webhooks of examples/bucket/deploy (its
// configurations and the CRD's conversion, generated by apigen), with the
// API server calling the operator's address instead of the Service and no
// caBundle: the operator publishes its own CA.
func (s *bkSuite) installWebhooks(t *testing.T) {
	s.webhookAddr = freeAddress(t)
	dyn, err := dynamic.NewForConfig(s.cp.Config())
	require.NoError(t, err)
	s.alpha = dyn.Resource(storagev1alpha1.SchemeGroupVersion.WithResource("buckets"))
	installed, err := s.cp.InstallWebhooks(t.Context(), filepath.Join(s.root, "examples", "bucket", "deploy"), s.webhookAddr, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"/convert", "/default-bucket", "/validate-bucket"}, installed.Paths)
}

// startStore runs the store on storeAddr with dataFile and waits for its
// listening line. The process belongs to the whole test.
func (s *bkSuite) startStore(t *testing.T) {
	t.Helper()
	p := startProcess(s.t, fmt.Sprintf("bucketstore #%d", s.countProcs(s.storeBin)+1), s.storeBin,
		"--listen="+s.storeAddr, "--data="+s.dataFile)
	s.procs = append(s.procs, p)
	s.storeProc = p
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.False(c, p.exited(), "%s exited:\n%s", p.name, p.out.String())
		assert.Contains(c, p.out.String(), "listening on http://"+s.storeAddr+"\n")
	}, waitTimeout, pollEvery, "%s listens on %s", p.name, s.storeAddr)
}

// startOperator runs the operator with leader election and waits until
// its caches synced (/readyz). The process belongs to the whole test.
func (s *bkSuite) startOperator(t *testing.T) {
	t.Helper()
	metricsAddr, healthAddr := freeAddress(t), freeAddress(t)
	p := startProcess(s.t, fmt.Sprintf("bucket operator #%d", s.countProcs(s.operatorBin)+1), s.operatorBin,
		"--kubeconfig="+s.kubeconfig,
		"--store-url=http://"+s.storeAddr,
		"--resync="+bkResync.String(),
		"--metrics-bind-address="+metricsAddr,
		"--health-probe-bind-address="+healthAddr,
		"--leader-elect",
		"--leader-elect-namespace="+bkNamespace,
		"--leader-elect-lease-duration="+leLeaseDuration.String(),
		"--leader-elect-renew-deadline="+leRenewDeadline.String(),
		"--leader-elect-retry-period="+leRetryPeriod.String(),
		"--shutdown-timeout="+shutdownTimeout.String(),
		"--webhook-bind-address="+s.webhookAddr,
		"--webhook-cert-secret="+bkCertSecret,
		"--webhook-cert-hosts=127.0.0.1",
		"--default-region="+bkDefaultRegion,
		"--regions="+strings.Join(bkRegions, ","),
		"-v=2")
	p.metricsURL, p.healthURL = "http://"+metricsAddr, "http://"+healthAddr
	p.controller = "buckets"
	s.procs = append(s.procs, p)
	s.operator = p
	relWaitReadyz(t, p)
}

// countProcs counts the processes started from bin.
func (s *bkSuite) countProcs(bin string) int {
	n := 0
	for _, p := range s.procs {
		if p.cmd.Path == bin {
			n++
		}
	}
	return n
}

func (s *bkSuite) start(t *testing.T) {
	s.startStore(t)
	s.startOperator(t)
	list, err := s.store.List(t.Context())
	require.NoError(t, err)
	assert.Empty(t, list, "a new store holds no bucket")
}

// bkDefaulted is spec as the operator's defaulting webhook leaves it.
func bkDefaulted(spec storagev1.BucketSpec) storagev1.BucketSpec {
	if spec.Region == "" {
		spec.Region = bkDefaultRegion
	}
	if spec.DeletionPolicy == "" {
		spec.DeletionPolicy = storagev1.DeletionPolicyDelete
	}
	return spec
}

// bkSpec returns the store's spec of a Bucket spec.
func bkSpec(spec storagev1.BucketSpec) store.Spec {
	spec = bkDefaulted(spec)
	return store.Spec{Region: spec.Region, Versioning: spec.Versioning}
}

// createBucket creates a Bucket as the admin.
func (s *bkSuite) createBucket(t *testing.T, name string, spec storagev1.BucketSpec) *storagev1.Bucket {
	t.Helper()
	b, err := s.buckets.Create(t.Context(), &storagev1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
	require.NoError(t, err)
	return b
}

// waitSynced waits until the store holds the bucket with the spec, owned
// by the Bucket, and the Bucket has the finalizer and reports its current
// generation Ready; it returns the Bucket.
func (s *bkSuite) waitSynced(t *testing.T, name string, spec storagev1.BucketSpec) *storagev1.Bucket {
	t.Helper()
	var b *storagev1.Bucket
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, found, err := s.store.Get(t.Context(), name)
		require.NoError(c, err)
		require.True(c, found, "the store holds bucket %s", name)
		assert.Equal(c, bkSpec(spec), got.Spec, "the store's spec")
		b, err = s.buckets.Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, string(b.UID), got.Owner, "the bucket is owned by its Bucket")
		assert.Equal(c, bkDefaulted(spec), b.Spec)
		assert.Contains(c, b.Finalizers, storagev1.Finalizer)
		assert.Equal(c, b.Generation, b.Status.ObservedGeneration, "observedGeneration")
		cond := meta.FindStatusCondition(b.Status.Conditions, storagev1.ConditionReady)
		if assert.NotNil(c, cond, "Ready condition") {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
			assert.Equal(c, storagev1.ReasonSynced, cond.Reason)
			assert.Equal(c, b.Generation, cond.ObservedGeneration)
		}
	}, waitTimeout, pollEvery, "bucket %s in the store and its Bucket Ready", name)
	return b
}

// The Buckets of the test and their specs; photos changes in specChange.
var (
	bkPhotos        = storagev1.BucketSpec{Region: "eu-west-1", Versioning: true}
	bkPhotosChanged = storagev1.BucketSpec{Region: "eu-central-1"}
	bkArchive       = storagev1.BucketSpec{Region: "us-east-1"}
)

func (s *bkSuite) create(t *testing.T) {
	created := time.Now()
	s.createBucket(t, "photos", bkPhotos)
	s.createBucket(t, "archive", bkArchive)
	s.waitSynced(t, "photos", bkPhotos)
	s.waitSynced(t, "archive", bkArchive)
	t.Logf("both Buckets in the store and Ready after %s", time.Since(created).Round(time.Millisecond))
}

// webhooks checks the operator's webhooks as the API server calls them: a
// Bucket without a region gets the default one, one in another region is
// refused as kubectl prints it, a v1alpha1 Bucket is stored as v1 with the
// policy of its annotation and read back as v1alpha1, and its Retain
// policy leaves its bucket in the store when it is deleted.
func (s *bkSuite) webhooks(t *testing.T) {
	ctx := t.Context()
	kubectl := func(stdin string, args ...string) (stdout, stderr string, err error) {
		var out, errOut bytes.Buffer
		cmd := s.cp.KubectlCommand(ctx, args...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
		err = cmd.Run()
		return out.String(), errOut.String(), err
	}

	// Defaulted: the region and the deletion policy.
	b := s.createBucket(t, "plain", storagev1.BucketSpec{})
	assert.Equal(t, storagev1.BucketSpec{Region: bkDefaultRegion, DeletionPolicy: storagev1.DeletionPolicyDelete}, b.Spec)
	s.waitSynced(t, "plain", storagev1.BucketSpec{})
	w := s.watchBucket(t, "plain")
	require.NoError(t, s.buckets.Delete(ctx, "plain", metav1.DeleteOptions{}))
	s.awaitDeleted(t, w, "plain")

	// Refused, with the field error as the API server shows its own.
	_, stderr, err := kubectl(`{"apiVersion":"storage.ctrlkit.io/v1","kind":"Bucket","metadata":{"name":"far"},"spec":{"region":"mars-1"}}`, "create", "-f", "-")
	require.Error(t, err)
	assert.Contains(t, stderr, `The Bucket "far" is invalid: spec.region: Unsupported value: "mars-1": supported values: "eu-west-1", "eu-central-1"`)
	_, err = s.buckets.Get(ctx, "far", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a refused Bucket is not stored: %v", err)

	// A v1alpha1 Bucket keeps v1's deletion policy in an annotation.
	spec := storagev1.BucketSpec{Region: "us-east-1", DeletionPolicy: storagev1.DeletionPolicyRetain}
	_, stderr, err = kubectl(`apiVersion: storage.ctrlkit.io/v1alpha1
kind: Bucket
metadata:
  name: kept
  annotations:
    `+storagev1alpha1.AnnotationDeletionPolicy+`: Retain
spec:
  region: us-east-1
`, "create", "-f", "-")
	require.NoError(t, err, stderr)
	assert.Contains(t, stderr, "Warning: storage.ctrlkit.io/v1alpha1 Bucket is deprecated; use storage.ctrlkit.io/v1\n")
	assert.Contains(t, stderr, "Warning: spec.deletionPolicy: Retain: the bucket stays in the storage service after the Bucket is deleted\n")
	kept := s.waitSynced(t, "kept", spec)
	assert.NotContains(t, kept.Annotations, storagev1alpha1.AnnotationDeletionPolicy, "v1 has the field instead")
	_, err = s.alpha.Patch(ctx, "kept", types.MergePatchType, []byte(`{"spec":{"versioning":true}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	spec.Versioning = true
	s.waitSynced(t, "kept", spec)
	alpha, err := s.alpha.Get(ctx, "kept", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"region": "us-east-1", "versioning": true}, alpha.Object["spec"])
	assert.Equal(t, "Retain", alpha.GetAnnotations()[storagev1alpha1.AnnotationDeletionPolicy])

	// Retained: the Bucket goes, its bucket stays.
	require.NoError(t, s.buckets.Delete(ctx, "kept", metav1.DeleteOptions{}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := s.buckets.Get(ctx, "kept", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "Bucket kept: want NotFound, got %v", err)
	}, waitTimeout, pollEvery, "Bucket kept is deleted")
	got, found, err := s.store.Get(ctx, "kept")
	require.NoError(t, err)
	require.True(t, found, "the store keeps bucket kept")
	assert.Equal(t, string(kept.UID), got.Owner)
	require.NoError(t, s.store.DeleteAs(ctx, got.Owner, "kept"))

	// The certificate the operator issued, and its CA in the configurations
	// and the CRD.
	ns, name, _ := strings.Cut(bkCertSecret, "/")
	secret, err := s.kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, "ca.crt", "ca.key"} {
		assert.NotEmpty(t, secret.Data[key], "key %s of Secret %s", key, bkCertSecret)
	}
	validating, err := s.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "bucket-operator", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, string(validating.Webhooks[0].ClientConfig.CABundle), string(secret.Data["ca.crt"]))
}

func (s *bkSuite) specChange(t *testing.T) {
	// A merge patch of the spec alone: the operator's finalizer and status
	// writes cannot make it conflict.
	patch := fmt.Sprintf(`{"spec":{"region":%q,"versioning":%t}}`, bkPhotosChanged.Region, bkPhotosChanged.Versioning)
	b, err := s.buckets.Patch(t.Context(), "photos", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Equal(t, bkDefaulted(bkPhotosChanged), b.Spec)
	synced := s.waitSynced(t, "photos", bkPhotosChanged)
	assert.GreaterOrEqual(t, synced.Generation, b.Generation)
}

func (s *bkSuite) restore(t *testing.T) {
	ctx := t.Context()
	want := bkSpec(bkPhotosChanged)
	other := store.Spec{Region: "ap-south-1", Versioning: true}
	changed, err := s.store.Put(ctx, "photos", other)
	require.NoError(t, err)
	require.Equal(t, other, changed.Spec)
	at := time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, found, err := s.store.Get(ctx, "photos")
		require.NoError(c, err)
		require.True(c, found, "the store holds bucket photos")
		assert.Equal(c, want, got.Spec)
		assert.Greater(c, got.Version, changed.Version, "written again after the change")
	}, waitTimeout, pollEvery, "the operator restores the spec of bucket photos")
	t.Logf("a spec changed behind the operator's back was restored after %s", time.Since(at).Round(time.Millisecond))

	require.NoError(t, s.store.Delete(ctx, "photos"))
	at = time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, found, err := s.store.Get(ctx, "photos")
		require.NoError(c, err)
		require.True(c, found, "the store holds bucket photos again")
		assert.Equal(c, want, got.Spec)
	}, waitTimeout, pollEvery, "the operator recreates bucket photos")
	t.Logf("a bucket deleted behind the operator's back was recreated after %s", time.Since(at).Round(time.Millisecond))
	s.waitSynced(t, "photos", bkPhotosChanged)
}

// watchBucket starts a watch of the Bucket, which must exist, from its
// current resourceVersion; the watch stops when t ends.
func (s *bkSuite) watchBucket(t *testing.T, name string) watch.Interface {
	t.Helper()
	b, err := s.buckets.Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	w, err := s.buckets.Watch(t.Context(), metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: b.ResourceVersion,
	})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return w
}

// awaitDeleted reads the watch of watchBucket until the Bucket is deleted
// and checks at once that the store no longer holds its bucket: the
// finalizer went only after the bucket did. It returns whether the watch
// showed the Bucket waiting for its finalizer (deletionTimestamp set, the
// finalizer held) before it went.
func (s *bkSuite) awaitDeleted(t *testing.T, w watch.Interface, name string) (heldByFinalizer bool) {
	t.Helper()
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "the watch of Bucket %s ended before it was deleted", name)
			switch ev.Type {
			case watch.Deleted:
				_, found, err := s.store.Get(t.Context(), name)
				require.NoError(t, err)
				assert.False(t, found, "the store still holds bucket %s when its Bucket is gone", name)
				_, err = s.buckets.Get(t.Context(), name, metav1.GetOptions{})
				assert.True(t, apierrors.IsNotFound(err), "Bucket %s: want NotFound, got %v", name, err)
				return heldByFinalizer
			case watch.Modified:
				if b, ok := ev.Object.(*storagev1.Bucket); ok && b.DeletionTimestamp != nil && slices.Contains(b.Finalizers, storagev1.Finalizer) {
					heldByFinalizer = true
				}
			case watch.Error:
				require.Failf(t, "watch error", "watching Bucket %s: %v", name, apierrors.FromObject(ev.Object))
			}
		case <-timeout.C:
			require.Failf(t, "timeout", "Bucket %s not deleted within %s", name, waitTimeout)
		}
	}
}

func (s *bkSuite) delete(t *testing.T) {
	w := s.watchBucket(t, "photos")
	deleted := time.Now()
	require.NoError(t, s.buckets.Delete(t.Context(), "photos", metav1.DeleteOptions{}))
	held := s.awaitDeleted(t, w, "photos")
	assert.True(t, held, "the finalizer held the Bucket until the bucket was gone")
	t.Logf("bucket and Bucket photos gone after %s", time.Since(deleted).Round(time.Millisecond))
}

// waitCleanupFailing waits until the Bucket, being deleted while the store
// is down, keeps its finalizer, reports Ready=False StoreUnavailable for
// its current generation (the deletion made a new one, so the condition
// was written by the failed cleanup), and a Warning StoreUnavailable about
// it exists. It returns the Bucket and the Warning.
func (s *bkSuite) waitCleanupFailing(t *testing.T, name string) (*storagev1.Bucket, corev1.Event) {
	t.Helper()
	var b *storagev1.Bucket
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		b, err = s.buckets.Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.NotNil(c, b.DeletionTimestamp, "deletionTimestamp")
		assert.Contains(c, b.Finalizers, storagev1.Finalizer)
		cond := meta.FindStatusCondition(b.Status.Conditions, storagev1.ConditionReady)
		if assert.NotNil(c, cond, "Ready condition") {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, storagev1.ReasonStoreUnavailable, cond.Reason)
			assert.Equal(c, b.Generation, cond.ObservedGeneration, "written for the deletion's generation")
		}
	}, waitTimeout, pollEvery, "Bucket %s waits with its finalizer and reports the store unavailable", name)
	cond := meta.FindStatusCondition(b.Status.Conditions, storagev1.ConditionReady)
	t.Logf("Bucket %s: Ready=%s %s: %s", name, cond.Status, cond.Reason, cond.Message)

	var warning corev1.Event
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		found := s.warnings(c, b, storagev1.ReasonStoreUnavailable)
		require.NotEmpty(c, found, "no Warning %s about Bucket %s yet", storagev1.ReasonStoreUnavailable, name)
		warning = found[0]
	}, waitTimeout, pollEvery, "Warning %s about Bucket %s", storagev1.ReasonStoreUnavailable, name)
	t.Logf("Warning %s about Bucket %s in namespace %s: %s", warning.Reason, name, warning.Namespace, warning.Message)
	return b, warning
}

// warnings lists the Warning events of reason about the Bucket (its UID, so
// not about an earlier Bucket of the same name).
func (s *bkSuite) warnings(t require.TestingT, b *storagev1.Bucket, reason string) []corev1.Event {
	list, err := s.kube.CoreV1().Events(bkEventNamespace).List(s.t.Context(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.kind": "Bucket", "involvedObject.name": b.Name, "type": corev1.EventTypeWarning}.String(),
	})
	require.NoError(t, err)
	var found []corev1.Event
	for _, e := range list.Items {
		if e.Reason == reason && e.InvolvedObject.UID == b.UID {
			found = append(found, e)
		}
	}
	return found
}

func (s *bkSuite) storeDownDuringDeletion(t *testing.T) {
	ctx := t.Context()
	spec := storagev1.BucketSpec{Region: "us-west-2"}
	s.createBucket(t, "logs", spec)
	s.waitSynced(t, "logs", spec)

	relKillHard(t, s.storeProc)
	require.NoError(t, s.buckets.Delete(ctx, "logs", metav1.DeleteOptions{}))
	b, _ := s.waitCleanupFailing(t, "logs")
	// Once per outage: the retries of the cleanup record no other Warning.
	found := s.warnings(t, b, storagev1.ReasonStoreUnavailable)
	if assert.Len(t, found, 1, "Warnings %s about Bucket logs", storagev1.ReasonStoreUnavailable) {
		assert.Equal(t, int32(1), found[0].Count, "count of the Warning")
	}

	w := s.watchBucket(t, "logs")
	restarted := time.Now()
	s.startStore(t)
	s.awaitDeleted(t, w, "logs")
	t.Logf("bucket and Bucket logs gone %s after the store's restart", time.Since(restarted).Round(time.Millisecond))
}

func (s *bkSuite) killMidCleanup(t *testing.T) {
	ctx := t.Context()
	spec := storagev1.BucketSpec{Region: "sa-east-1", Versioning: true}
	s.createBucket(t, "media", spec)
	s.waitSynced(t, "media", spec)

	relKillHard(t, s.storeProc)
	require.NoError(t, s.buckets.Delete(ctx, "media", metav1.DeleteOptions{}))
	s.waitCleanupFailing(t, "media") // the operator has tried
	relKillHard(t, s.operator)
	s.startStore(t)

	// No operator runs: the bucket is still in the store, and the Bucket
	// waits with its finalizer.
	got, found, err := s.store.Get(ctx, "media")
	require.NoError(t, err)
	require.True(t, found, "the store still holds bucket media")
	assert.Equal(t, bkSpec(spec), got.Spec)
	b, err := s.buckets.Get(ctx, "media", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, b.DeletionTimestamp)
	require.Contains(t, b.Finalizers, storagev1.Finalizer)

	w := s.watchBucket(t, "media")
	restarted := time.Now()
	s.startOperator(t)
	s.awaitDeleted(t, w, "media")
	t.Logf("bucket and Bucket media gone %s after the operator's restart", time.Since(restarted).Round(time.Millisecond))
}

// operatorMetric is the sum of the operator's samples of the metric of its
// controller.
func (s *bkSuite) operatorMetric(t require.TestingT, name string) float64 {
	code, body, err := httpGet(s.t.Context(), s.operator.metricsURL+"/metrics")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	n, _ := metricSum(body, name, map[string]string{"controller": s.operator.controller})
	return n
}

func (s *bkSuite) foreignBucket(t *testing.T) {
	ctx := t.Context()
	// Someone else's bucket, made in the store without an owner.
	theirs, err := s.store.Put(ctx, "shared", store.Spec{Region: "us-east-1"})
	require.NoError(t, err)
	require.Empty(t, theirs.Owner)
	terminal := s.operatorMetric(t, "controller_runtime_terminal_reconcile_errors_total")

	created := time.Now()
	b := s.createBucket(t, "shared", storagev1.BucketSpec{Region: "eu-west-1", Versioning: true})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := s.buckets.Get(ctx, "shared", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Contains(c, got.Finalizers, storagev1.Finalizer, "the finalizer, whose cleanup must leave the bucket")
		cond := meta.FindStatusCondition(got.Status.Conditions, storagev1.ConditionReady)
		if assert.NotNil(c, cond, "Ready condition") {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, storagev1.ReasonBucketExists, cond.Reason)
			assert.Equal(c, got.Generation, cond.ObservedGeneration)
		}
		assert.Len(c, s.warnings(c, b, storagev1.ReasonBucketExists), 1, "Warning %s", storagev1.ReasonBucketExists)
		assert.Equal(c, terminal+1, s.operatorMetric(c, "controller_runtime_terminal_reconcile_errors_total"), "the refusal is a terminal error")
	}, waitTimeout, pollEvery, "Bucket shared refused with Ready=False %s and a Warning", storagev1.ReasonBucketExists)
	t.Logf("Bucket shared refused after %s", time.Since(created).Round(time.Millisecond))
	// failures counts the operator's log lines of failed reconciles of the
	// refusal.
	failures := func() int {
		n := 0
		for line := range strings.Lines(s.operator.out.String()) {
			if strings.Contains(line, "Reconcile failed") && strings.Contains(line, "did not create") {
				n++
			}
		}
		return n
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.Equal(c, 1, failures()) }, waitTimeout, pollEvery, "the refusal is logged")

	// The periodic checks (every bkResync) and the notification of the
	// bucket come back to the Bucket; they record nothing and log nothing.
	reconciles := s.operatorMetric(t, "controller_runtime_reconcile_total")
	checked := time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.GreaterOrEqual(c, s.operatorMetric(c, "controller_runtime_reconcile_total"), reconciles+6, "reconciles")
		assert.GreaterOrEqual(c, time.Since(checked), 3*bkResync, "three periodic checks")
	}, waitTimeout, pollEvery, "periodic checks of Bucket shared")
	found := s.warnings(t, b, storagev1.ReasonBucketExists)
	if assert.Len(t, found, 1, "Warnings %s about Bucket shared", storagev1.ReasonBucketExists) {
		assert.Equal(t, int32(1), found[0].Count, "count of the Warning")
		t.Logf("Warning %s: %s", found[0].Reason, found[0].Message)
	}
	assert.Equal(t, terminal+1, s.operatorMetric(t, "controller_runtime_terminal_reconcile_errors_total"), "terminal errors")
	assert.Equal(t, 1, failures(), "log lines of the refusal")
	t.Logf("%.0f reconciles in %s after the refusal, quiet", s.operatorMetric(t, "controller_runtime_reconcile_total")-reconciles,
		time.Since(checked).Round(time.Millisecond))
	got, ok, err := s.store.Get(ctx, "shared")
	require.NoError(t, err)
	require.True(t, ok, "the store holds bucket shared")
	assert.Equal(t, theirs, got, "bucket shared is untouched")

	// Deleted: the Bucket goes, the bucket stays.
	require.NoError(t, s.buckets.Delete(ctx, "shared", metav1.DeleteOptions{}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := s.buckets.Get(ctx, "shared", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "Bucket shared: want NotFound, got %v", err)
	}, waitTimeout, pollEvery, "Bucket shared goes")
	got, ok, err = s.store.Get(ctx, "shared")
	require.NoError(t, err)
	require.True(t, ok, "the store still holds bucket shared")
	assert.Equal(t, theirs, got, "bucket shared is untouched")
	assert.Contains(t, s.operator.out.String(), "Leaving the bucket in the storage service", "the cleanup ran and left it")

	// Its owner removes it, so that the store holds only the operator's.
	require.NoError(t, s.store.Delete(ctx, "shared"))
}

func (s *bkSuite) nothingLeaked(t *testing.T) {
	ctx := t.Context()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		list, err := s.buckets.List(ctx, metav1.ListOptions{})
		require.NoError(c, err)
		var names []string
		for _, b := range list.Items {
			names = append(names, b.Name)
			assert.Nil(c, b.DeletionTimestamp, "Bucket %s is not being deleted", b.Name)
			cond := meta.FindStatusCondition(b.Status.Conditions, storagev1.ConditionReady)
			if assert.NotNil(c, cond, "Ready condition of Bucket %s", b.Name) {
				assert.Equal(c, metav1.ConditionTrue, cond.Status, "Ready of Bucket %s", b.Name)
				assert.Equal(c, b.Generation, cond.ObservedGeneration, "observedGeneration of Ready of Bucket %s", b.Name)
			}
		}
		buckets, err := s.store.List(ctx)
		require.NoError(c, err)
		var inStore []string
		for _, sb := range buckets {
			inStore = append(inStore, sb.Name)
		}
		assert.Equal(c, []string{"archive"}, names, "Buckets")
		assert.Equal(c, names, inStore, "buckets in the store")
	}, waitTimeout, pollEvery, "the store holds exactly the buckets of the existing Buckets, all Ready")
}

func (s *bkSuite) sigterm(t *testing.T) {
	relTerminate(t, s.operator, shutdownTimeout+20*time.Second)
	lease, err := s.kube.CoordinationV1().Leases(bkNamespace).Get(t.Context(), bkLease, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, ptr.Deref(lease.Spec.HolderIdentity, ""), "the Lease is released on SIGTERM")
	relTerminate(t, s.storeProc, 20*time.Second)
	relAssertNoDataRace(t, s.procs...)
}
