package multicluster

import "k8s.io/client-go/tools/cache"

// Key names an object in one member cluster: the key type of a fleet's
// controllers.
type Key struct {
	// Cluster is the member cluster's name, as its Provider reports it.
	Cluster string
	cache.ObjectName
}

// String returns "cluster/namespace/name", or "cluster/name" for an object
// without namespace.
func (k Key) String() string { return k.Cluster + "/" + k.ObjectName.String() }

// clusterOf is the fairness group of a key: its cluster.
func clusterOf(k Key) string { return k.Cluster }

// ClusterName returns the key's cluster: the span of a traced reconcile
// names it (tracing.ClusterKey).
func (k Key) ClusterName() string { return k.Cluster }
