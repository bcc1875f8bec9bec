package operator

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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

// One reconcile whose error carries bytes that are not UTF-8 (a reason
// phrase of an external system, quoted verbatim) must not cost the spans
// of the other reconciles: the span's status and exception event carry
// the error's text, OTLP's string fields must be UTF-8, and the protobuf
// encoding of the whole batch fails, so nothing of it reaches the
// collector (the SDK reports it on the standard library's log).
func TestNonUTF8ErrorKeepsTheBatch(t *testing.T) {
	clearOTelEnv(t)
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

	client := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "good"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bad"}},
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done atomic.Int32
	ctrl, err := queue.New("configmaps", reconcile.Func[cache.ObjectName](func(_ context.Context, key cache.ObjectName) (reconcile.Result, error) {
		defer func() {
			if done.Add(1) == 2 {
				cancel()
			}
		}()
		if key.Name == "bad" {
			return reconcile.Result{}, reconcile.Terminal(errors.New("bucket refused: \xff\xfe"))
		}
		return reconcile.Result{}, nil
	}), f.ControllerOptions()...)
	require.NoError(t, err)
	require.NoError(t, ctrl.Watch(queue.On(factory.Core().V1().ConfigMaps().TypedInformer(), informer.EnqueueHandler[*corev1.ConfigMap](ctrl))))
	require.NoError(t, Run(ctx, append(f.Options(client), WithInformers(factory), WithControllers(ctrl))...))

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, posts, "the spans of both reconciles (the good one's too) were exported at Run's stop")
}
