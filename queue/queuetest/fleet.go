package queuetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/operator"
)

// StartFleet runs fleet and ctrls in the background with operator.Run and
// opts, as Start runs one controller: ctrls are the controllers of
// multicluster.NewController and any other controllers the test runs
// beside them (those of the management cluster, say), opts the informer
// factories of the management cluster, typically (a controller that is
// no Controller of this package goes in opts, with
// operator.WithControllers, and is not waited for). It returns once the
// Fleet and every controller of ctrls HasSynced; the Fleet has synced
// once its Provider has reported its first list (Synced) and each of
// those members was tried once (engaged, or failed): the members a test
// reported before StartFleet (see Provider) are then ready, unless they
// cannot be engaged, and WaitIdle waits for their first reconciles.
//
// When the test ends, Run is stopped and waited for: the controllers
// drain, the Fleet stops its members and the informers are shut down. An
// error from Run (the Provider's, a member whose reconciles did not
// return) fails the test, and so do a Run that returns early and a Fleet
// or controller that does not sync within Timeout.
//
// A test of a Fleet whose Provider has not reported its first list, which
// StartFleet would wait for, runs it with Start instead, which waits for
// one controller only: queuetest.Start(t, ctrl, operator.WithControllers(fleet)).
func StartFleet[T any](t testing.TB, fleet *multicluster.Fleet[T], ctrls []Controller, opts ...operator.Option) {
	t.Helper()
	if fleet == nil {
		t.Fatalf("queuetest.StartFleet: the fleet is nil")
		return
	}
	all := []operator.Controller{fleet}
	for _, ctrl := range ctrls {
		all = append(all, ctrl)
	}
	start(t, "the fleet and its controllers to sync", all, opts, func() (bool, string) {
		if !fleet.HasSynced() {
			return false, fmt.Sprintf("fleet %q not synced (members %v)", fleet.Name(), fleet.Members())
		}
		for i, ctrl := range ctrls {
			if !ctrl.HasSynced() {
				return false, fmt.Sprintf("controller %d of %d not synced", i+1, len(ctrls))
			}
		}
		return true, ""
	})
}

// Provider is a multicluster.Provider for tests: a test reports the
// members with its methods, which are those of the multicluster.Members
// (and multicluster.Refuser) the Fleet running it gives it. What is
// reported while no Fleet runs it (before StartFleet, typically) is kept,
// and reported in order when one does; what is reported while one runs
// it is reported at once. The zero value is ready to use; a Provider is
// safe for concurrent use, and one Fleet at a time may run it.
type Provider struct {
	mu sync.Mutex
	// running is the Members of the Fleet that runs the Provider; nil
	// while none does. Guarded by mu.
	running multicluster.Members
	// pending are the reports made while no Fleet ran the Provider, in
	// order. Guarded by mu.
	pending []func(multicluster.Members)
}

var _ multicluster.Provider = (*Provider)(nil)

// Run reports what was reported before to m, then each report as it is
// made, until ctx ends; then it returns nil. It returns an error at once
// if another Fleet runs the Provider.
func (p *Provider) Run(ctx context.Context, m multicluster.Members) error {
	p.mu.Lock()
	if p.running != nil {
		p.mu.Unlock()
		return errors.New("queuetest: the Provider is run by another Fleet")
	}
	p.running = m
	for _, report := range p.pending {
		report(m)
	}
	p.pending = nil
	p.mu.Unlock()
	<-ctx.Done()
	p.mu.Lock()
	p.running = nil
	p.mu.Unlock()
	return nil
}

// Set makes name a member reached with cfg (multicluster.Members.Set).
// The member's client is whatever the Fleet builds of cfg: a test gives
// it fake clientsets with multicluster.WithClients.
func (p *Provider) Set(name string, cfg *rest.Config) {
	p.report(func(m multicluster.Members) { m.Set(name, cfg) })
}

// Delete makes name no member (multicluster.Members.Delete).
func (p *Provider) Delete(name string) {
	p.report(func(m multicluster.Members) { m.Delete(name) })
}

// Refuse makes name no member because of err, as a Provider that refuses
// a member's config does (multicluster.Refuser): the Fleet's Status of
// name then reports err. To Members that are no Refuser it is a Delete.
func (p *Provider) Refuse(name string, err error) {
	p.report(func(m multicluster.Members) {
		if r, ok := m.(multicluster.Refuser); ok {
			r.Refuse(name, err)
			return
		}
		m.Delete(name)
	})
}

// Synced tells the Fleet that the members reported so far are its first
// list (multicluster.Members.Synced): until then, the Fleet has not
// synced, and StartFleet waits.
func (p *Provider) Synced() {
	p.report(func(m multicluster.Members) { m.Synced() })
}

// report hands r to the Fleet that runs p, or keeps it until one does.
func (p *Provider) report(r func(multicluster.Members)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running != nil {
		r(p.running)
		return
	}
	p.pending = append(p.pending, r)
}
