package operator

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

// The default service.name is the binary's name, which, like
// $OTEL_SERVICE_NAME, need not be UTF-8 (a file name is bytes). It goes
// into the resource of every export as it is: an invalid one makes the
// encoding of every batch fail, so no span ever reaches the collector,
// while $OTEL_SERVICE_NAME with the same bytes is refused at start.
func TestNonUTF8BinaryNameKeepsTheExport(t *testing.T) {
	clearOTelEnv(t)
	arg0 := os.Args[0]
	os.Args[0] = "/usr/local/bin/op\xff\xfe"
	defer func() { os.Args[0] = arg0 }()
	var mu sync.Mutex
	var posts []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		posts = append(posts, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	stdlibLog(t)
	f := parse(t, Flags{}, "--tracing-endpoint="+collector.URL)
	require.NoError(t, f.Validate())

	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "good"}})
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done atomic.Int32
	ctrl, err := queue.New("configmaps", reconcile.Func[cache.ObjectName](func(_ context.Context, key cache.ObjectName) (reconcile.Result, error) {
		if done.Add(1) == 1 {
			cancel()
		}
		return reconcile.Result{}, nil
	}), f.ControllerOptions()...)
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(queue.On(factory.Core().V1().ConfigMaps().TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))))
	require.NoError(t, Run(ctx, append(f.Options(client), WithInformers(factory), WithControllers(ctrl))...))

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, posts, "the reconcile's span was exported at Run's stop")
}
