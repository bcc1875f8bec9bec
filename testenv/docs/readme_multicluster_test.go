package docs

// docs/multicluster.md, "Status across members": what the page shows
// beside the operator of queue/multicluster/example_status_test.go (which
// the page names, so its blocks are checked against that file): the
// stand-in generation of a ConfigMap, the status field declaring the
// per-member entries, and the "Testing" section's member that stops
// answering.

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/fleetv1"
)

// dataGeneration stands for the generation of a ConfigMap, which has none:
// a hash of its data, never 0 and never negative.
func dataGeneration(cm *corev1.ConfigMap) int64 {
	h := fnv.New64a()
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		fmt.Fprintf(h, "%q=%q;", k, cm.Data[k])
	}
	return int64(h.Sum64()>>1) | 1
}

var _ = dataGeneration

// stopAnswering makes a fake member fail the Fleet's probes (and any
// other request for its version), as a member that stopped answering.
func stopAnswering(member *fake.Clientset) {
	member.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
}

var _ = stopAnswering

// propagatedStatus is the status of a custom resource applied to every
// member, declaring its per-member entries as the docs show.
type propagatedStatus struct {
	// Members is where the object stands in each member cluster.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Members []fleetv1.MemberStatus `json:"members,omitempty"`
}

// A status built by Results fills the declared field as it is.
var _ = func(members []multicluster.MemberStatus) propagatedStatus {
	return propagatedStatus{Members: members}
}
