package multicluster

import (
	"sync"
	"testing"
	"time"
)

// raceFleet is a fleetView whose member a goes not ready (the Fleet calls
// Results' onNotReady hook, its mu held, as disengage does) right after
// Results.fleetSynced has read a's Status as ready, and is ready again
// afterwards.
type raceFleet struct {
	mu    sync.Mutex
	r     *Results[string, string]
	reads int
}

func (f *raceFleet) Status(string) (Status, bool) {
	f.mu.Lock()
	f.reads++
	first := f.reads == 1
	f.mu.Unlock()
	if first {
		// a stops answering between the read and fleetSynced's lock
		// (Fleet.disengage: lockedNote, lockedNotReady), then is engaged
		// and ready again.
		defer f.r.lockedNotReady("a")
	}
	return Status{Ready: true, Since: time.Now()}, true
}
func (f *raceFleet) Members() []string               { return []string{"a"} }
func (f *raceFleet) HasSynced() bool                 { return true }
func (f *raceFleet) isStopping() bool                { return false }
func (f *raceFleet) ifHeld(_ string, fn func()) bool { fn(); return true }
func (nopQueue) Add(string)                          {}
func (nopQueue) AddLowPriority(string)               {}
func (nopQueue) AddAfter(string, time.Duration)      {}

type nopQueue struct{}

// Results.Reported never waits for a member that went not ready and came
// back, also when it went not ready while the first sync read which
// members are ready (Fleet.disengage calls lockedNotReady then): it is
// not a member ready since the first sync.
func TestReportedDoesNotWaitForMemberNotReadyDuringFirstSync(t *testing.T) {
	f := &raceFleet{}
	r := &Results[string, string]{fleet: f, q: nopQueue{}, byHub: map[string]map[string]MemberResult[string]{}, byName: map[string]map[string]struct{}{}, waiting: map[string]struct{}{}}
	f.r = r
	t.Cleanup(r.stop)
	r.fleetSynced()
	// a went not ready after the first sync's read, and is ready again:
	// it became ready after the first sync.
	if !r.Reported("app/web", []string{"a"}, 1) {
		t.Fatalf("a went not ready (onNotReady called) after the first sync read it ready, and came back; Reported waits for it as a member ready since the first sync (restarted: %v)", r.restarted)
	}
}
