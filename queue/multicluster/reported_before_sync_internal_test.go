package multicluster

import (
	"sync/atomic"
	"testing"
	"time"
)

// syncingFleet is a fleetView of two ready members whose HasSynced turns
// true when the test says so (as the Fleet's does when its last member
// of the first list has been tried), before Results' onSynced hook runs.
type syncingFleet struct{ synced atomic.Bool }

func (f *syncingFleet) Status(string) (Status, bool) {
	return Status{Ready: true, Since: time.Now()}, true
}
func (f *syncingFleet) Members() []string               { return []string{"a", "b"} }
func (f *syncingFleet) HasSynced() bool                 { return f.synced.Load() }
func (f *syncingFleet) isStopping() bool                { return false }
func (f *syncingFleet) ifHeld(_ string, fn func()) bool { fn(); return true }

// The per-member hub reconcile of docs/multicluster.md (reconcileSource
// in example_status_test.go) asks Reported, then Status, and writes
// unless Reported is false or the reason is FleetNotSynced. At a restart,
// if the Fleet syncs between the two, Status is no longer FleetNotSynced
// and lists a and b, ready at that first sync with no result yet,
// Pending, over the status from before the restart (2 entries): so
// Reported is false until Results has seen the sync, which adds the key
// again.
func TestPerMemberPatternWritesPendingWhenFleetSyncsBetweenReportedAndStatus(t *testing.T) {
	f := &syncingFleet{}
	r := &Results[string, string]{fleet: f, q: nopQueue{}, byHub: map[string]map[string]MemberResult[string]{}, byName: map[string]map[string]struct{}{}, waiting: map[string]struct{}{}}
	t.Cleanup(r.stop)
	hub, clusters := "app/web", f.Members()

	reported := r.Reported(hub, clusters, 2) // the reconcile, as the Fleet is about to sync
	f.synced.Store(true)                     // the Fleet syncs; its onSynced hooks have not run yet
	members, ready := r.Status(hub, 0, clusters)
	r.fleetSynced() // the hook runs: the wait starts now

	if reported && ready.Reason != ReasonFleetNotSynced {
		t.Fatalf("the per-member reconcile writes %s/%s %v over the status from before the restart: Reported was true and Status not FleetNotSynced, though a and b, ready at the first sync, have no result yet (and Reported now says %v)",
			ready.Status, ready.Reason, members, r.Reported(hub, clusters, 2))
	}
}
