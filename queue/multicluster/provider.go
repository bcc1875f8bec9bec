package multicluster

import (
	"context"

	"k8s.io/client-go/rest"
)

// Provider tells a Fleet which clusters are its members and how to reach
// them. Package queue/multicluster/kubeconfig has one that reads
// kubeconfigs from Secrets, package queue/multicluster/clusterprofile one
// that reads the ClusterProfiles of sig-multicluster's cluster inventory
// API.
type Provider interface {
	// Run reports the members to m until ctx ends, then returns nil; an
	// error it returns before that stops the Fleet. It calls m.Synced once
	// it has reported every member it knew when it started.
	Run(ctx context.Context, m Members) error
}

// Members is how a Provider reports members to a Fleet. Its methods may be
// called from any goroutine and never block on a cluster.
type Members interface {
	// Set makes name a member reached with cfg. Set with a config that
	// differs from the current one (new credentials, a new address)
	// stops the cluster and engages it again with cfg; Set with an
	// equal config does nothing. The Fleet keeps cfg: the Provider must
	// not change it afterwards. Set with a nil config is Delete.
	Set(name string, cfg *rest.Config)
	// Delete makes name no longer a member: its informers are stopped,
	// its waiting keys dropped and its reconciles cancelled.
	Delete(name string)
	// Synced tells the Fleet that every member known at the start has
	// been Set.
	Synced()
}

// Refuser is implemented by the Members a Fleet gives its Provider. A
// Provider that refuses a member's config (one it cannot read, or one
// that asks for what the operator did not allow, such as running a
// command) calls Refuse, where its Members implement it, rather than
// Delete, so that the Fleet's Status says why the member is not engaged.
type Refuser interface {
	// Refuse makes name no member, as Delete does, and keeps err as the
	// reason until name is Set or Deleted: Fleet.Status reports name,
	// not ready, with err. Its Status's Since is when name was first
	// refused with err's message: refusing it again for the same reason
	// does not move it.
	Refuse(name string, err error)
}
