package e2e

// Helpers of TestSharding and BenchmarkShardedConvergence: the ownership
// the replicas report on /metrics, and the kube-apiserver's own request
// counters for Foos and Deployments.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	samplev1alpha1 "github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
)

// shardOwnership is what the replicas of one group say on /metrics, in
// the order of the replicas asked.
type shardOwnership struct {
	// members is each replica's ctrlkit_shard_members, owned its
	// ctrlkit_shard_owned_keys summed over its controllers.
	members, owned []float64
}

// readShardOwnership reads the /metrics page of every replica.
func readShardOwnership(ctx context.Context, replicas []*process, group string) (shardOwnership, error) {
	var s shardOwnership
	for _, p := range replicas {
		if p.exited() {
			return s, fmt.Errorf("%s exited: %v", p.name, p.waitErr)
		}
		code, text, err := httpGet(ctx, p.metricsURL+"/metrics")
		if err != nil {
			return s, fmt.Errorf("%s: %w", p.name, err)
		}
		if code != 200 {
			return s, fmt.Errorf("%s: /metrics: HTTP %d", p.name, code)
		}
		labels := map[string]string{"group": group}
		members, _ := metricSum(text, "ctrlkit_shard_members", labels)
		owned, _ := metricSum(text, "ctrlkit_shard_owned_keys", labels)
		s.members = append(s.members, members)
		s.owned = append(s.owned, owned)
	}
	return s, nil
}

// complete reports whether every replica sees all of them as members and
// together they own keys keys. The replicas never own a key twice, so the
// sum means that each key is owned by exactly one of them.
func (s shardOwnership) complete(keys int) bool {
	total := 0.0
	for i, m := range s.members {
		if m != float64(len(s.members)) {
			return false
		}
		total += s.owned[i]
	}
	return total == float64(keys)
}

// waitShardOwnership polls the replicas' /metrics every 100ms until
// ownership is complete (shardOwnership.complete) for keys keys and returns
// when it first saw it so. It fails tb after timeout, or as soon as a
// replica has exited.
func waitShardOwnership(ctx context.Context, tb testing.TB, replicas []*process, group string, keys int, timeout time.Duration) (time.Time, shardOwnership) {
	tb.Helper()
	var last shardOwnership
	var lastErr error
	var at time.Time
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := readShardOwnership(ctx, replicas, group)
		if err != nil {
			for _, p := range replicas {
				if p.exited() {
					return false, err
				}
			}
			lastErr = err
			return false, nil
		}
		last, at = s, time.Now()
		return s.complete(keys), nil
	})
	require.NoError(tb, err, "%d replicas each see %d members and own %d keys together (last: members %v, owned keys %v; last error %v)",
		len(replicas), len(replicas), keys, last.members, last.owned, lastErr)
	return at, last
}

// apiserverCounters are kube-apiserver's counters (from its /metrics) of
// the requests for Foos and Deployments, summed over every client.
type apiserverCounters struct {
	// writes are the creates, updates, patches and deletes of Foos, their
	// status and Deployments, but for Foo creates: those come from the
	// tests, never from the controller. conflicts are those of them
	// answered 409.
	writes, conflicts float64
	// lists are the LIST requests (each page counts) for Foos and
	// Deployments, listBytes the bytes of their responses.
	lists, listBytes float64
	// watchEvents are the events that watches of Foos and Deployments
	// sent, watchBytes their bytes; a streaming list (a watch with initial
	// events) is counted here, not as a LIST.
	watchEvents, watchBytes float64
}

// apiserverResource is a group, resource and subresource as the labels of
// kube-apiserver's request metrics name them.
type apiserverResource struct{ group, resource, subresource string }

var (
	apiserverFoos        = apiserverResource{samplev1alpha1.GroupName, "foos", ""}
	apiserverFooStatus   = apiserverResource{samplev1alpha1.GroupName, "foos", "status"}
	apiserverDeployments = apiserverResource{"apps", "deployments", ""}
	// apiserverWriteVerbs are the verbs of writes in the metrics' verb
	// label (a delete of a collection is DELETECOLLECTION).
	apiserverWriteVerbs = []string{"POST", "PUT", "PATCH", "APPLY", "DELETE"}
)

// readAPIServerCounters scrapes kube-apiserver's /metrics as kube's user
// (one that may read it, the admin).
func readAPIServerCounters(ctx context.Context, kube kubernetes.Interface) (apiserverCounters, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiserverCounters{}, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	// The page is megabytes long; metricSum runs many times over the few
	// lines that matter.
	var kept strings.Builder
	for line := range strings.Lines(string(raw)) {
		if strings.HasPrefix(line, "apiserver_") &&
			(strings.Contains(line, `resource="foos"`) || strings.Contains(line, `resource="deployments"`)) {
			kept.WriteString(line)
		}
	}
	text := kept.String()
	var c apiserverCounters
	for _, r := range []apiserverResource{apiserverFoos, apiserverFooStatus, apiserverDeployments} {
		labels := map[string]string{"group": r.group, "resource": r.resource, "subresource": r.subresource}
		for _, verb := range apiserverWriteVerbs {
			if verb == "POST" && r == apiserverFoos {
				continue
			}
			labels["verb"] = verb
			delete(labels, "code")
			n, _ := metricSum(text, "apiserver_request_total", labels)
			c.writes += n
			labels["code"] = "409"
			n, _ = metricSum(text, "apiserver_request_total", labels)
			c.conflicts += n
		}
	}
	for _, r := range []apiserverResource{apiserverFoos, apiserverDeployments} {
		labels := map[string]string{"verb": "LIST", "group": r.group, "resource": r.resource, "subresource": r.subresource}
		n, _ := metricSum(text, "apiserver_request_total", labels)
		c.lists += n
		n, _ = metricSum(text, "apiserver_response_sizes_sum", labels)
		c.listBytes += n
		labels = map[string]string{"group": r.group, "resource": r.resource}
		n, _ = metricSum(text, "apiserver_watch_events_total", labels)
		c.watchEvents += n
		n, _ = metricSum(text, "apiserver_watch_events_sizes_sum", labels)
		c.watchBytes += n
	}
	return c, nil
}

// sub returns the counts of the requests between before and c.
func (c apiserverCounters) sub(before apiserverCounters) apiserverCounters {
	return apiserverCounters{
		writes:      c.writes - before.writes,
		conflicts:   c.conflicts - before.conflicts,
		lists:       c.lists - before.lists,
		listBytes:   c.listBytes - before.listBytes,
		watchEvents: c.watchEvents - before.watchEvents,
		watchBytes:  c.watchBytes - before.watchBytes,
	}
}

// add returns the sum of c and d.
func (c apiserverCounters) add(d apiserverCounters) apiserverCounters {
	return apiserverCounters{
		writes:      c.writes + d.writes,
		conflicts:   c.conflicts + d.conflicts,
		lists:       c.lists + d.lists,
		listBytes:   c.listBytes + d.listBytes,
		watchEvents: c.watchEvents + d.watchEvents,
		watchBytes:  c.watchBytes + d.watchBytes,
	}
}
