package shard

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyOwnedBy returns a key that Assign gives to owner1 among members1 and to
// owner2 among members2, or "" if none of the first 10,000 candidates does.
func keyOwnedBy(members1 []string, owner1 string, members2 []string, owner2 string) string {
	for i := range 10000 {
		if k := fmt.Sprintf("ns/key-%d", i); Assign(members1, k) == owner1 && Assign(members2, k) == owner2 {
			return k
		}
	}
	return ""
}

func TestViewOwns(t *testing.T) {
	ab, abc := []string{"a", "b"}, []string{"a", "b", "c"}
	// A key a owns among {a,b} and {a,b,c}, and one that moves from a to c
	// when c joins.
	stays, moves := keyOwnedBy(ab, "a", abc, "a"), keyOwnedBy(ab, "a", abc, "c")
	tests := []struct {
		name      string
		self      string
		target    []string
		confirmed []string
		claims    map[string][]string
		key       string
		want      bool
	}{
		{name: "nothing confirmed yet", self: "a", target: abc, key: stays, want: false},
		{name: "steady state, own key", self: "a", target: abc, confirmed: abc, claims: map[string][]string{"b": abc, "c": abc}, key: stays, want: true},
		{name: "steady state, another's key", self: "a", target: abc, confirmed: abc, claims: map[string][]string{"b": abc, "c": abc}, key: moves, want: false},
		{name: "old owner still works under the old list", self: "c", target: abc, confirmed: abc, claims: map[string][]string{"a": ab, "b": ab}, key: moves, want: false},
		{name: "old owner published the new list", self: "c", target: abc, confirmed: abc, claims: map[string][]string{"a": abc, "b": ab}, key: moves, want: true},
		{name: "published list not confirmed: keep only keys of both", self: "a", target: abc, confirmed: ab, claims: map[string][]string{"b": ab}, key: stays, want: true},
		{name: "released at once when the target changes", self: "a", target: abc, confirmed: ab, claims: map[string][]string{"b": ab}, key: moves, want: false},
		{name: "joined, nothing published by the others", self: "c", target: abc, confirmed: abc, claims: map[string][]string{"a": nil, "b": nil}, key: moves, want: true},
		{name: "a list without its publisher claims nothing", self: "c", target: abc, confirmed: abc, claims: map[string][]string{"a": []string{"b", "c"}}, key: moves, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NotEmpty(t, tt.key)
			key := tt.key
			v := newView(nil, tt.self, tt.target, tt.confirmed, nil, tt.claims, time.Hour)
			assert.Equal(t, tt.want, v.owns(hashKey(key)))
		})
	}
}

// TestViewAgreesWithAssign checks that the steady-state view of every member
// gives each key to the member Assign names, and to no other.
func TestViewAgreesWithAssign(t *testing.T) {
	members := []string{"m-0", "m-1", "m-2", "m-3"}
	views := map[string]*view{}
	for _, self := range members {
		claims := map[string][]string{}
		for _, other := range members {
			if other != self {
				claims[other] = members
			}
		}
		views[self] = newView(nil, self, members, members, nil, claims, time.Hour)
	}
	for i := range 2000 {
		key := fmt.Sprintf("ns/foo-%d", i)
		var owners []string
		for _, self := range members {
			if views[self].owns(hashKey(key)) {
				owners = append(owners, self)
			}
		}
		require.Equal(t, []string{Assign(members, key)}, owners, key)
	}
}

// TestRendezvousSpreadAndMoves checks the two properties rendezvous hashing
// is chosen for: an even split, and about 1/N of the keys moving when an
// N-th member joins (only to the new member).
func TestRendezvousSpreadAndMoves(t *testing.T) {
	const keys = 30000
	three := []string{"foo-controller-1a2b", "foo-controller-3c4d", "foo-controller-5e6f"}
	four := append(three[:3:3], "foo-controller-7a8b")
	split := map[string]int{}
	moved := 0
	for i := range keys {
		key := fmt.Sprintf("default/foo-%d", i)
		before, after := Assign(three, key), Assign(four, key)
		split[before]++
		if before != after {
			moved++
			require.Equal(t, four[3], after, "a key may only move to the member that joined")
		}
	}
	for _, m := range three {
		assert.InDelta(t, keys/3, split[m], keys/3*0.05, "split of %s", m)
	}
	assert.InDelta(t, keys/4, moved, keys/4*0.05, "keys moved when a fourth member joined")
}

// TestMayGain checks, for the views a replica goes through when a member
// joins and when one is killed, which changes ask for a relist: only
// those that give keys.
func TestMayGain(t *testing.T) {
	ab, abc := []string{"a", "b"}, []string{"a", "b", "c"}
	type step struct {
		target, confirmed []string
		claims            map[string][]string
		gains             bool
	}
	tests := []struct {
		name  string
		self  string
		steps []step
	}{
		{name: "c joins, seen by a", self: "a", steps: []step{
			{target: ab, confirmed: ab, claims: map[string][]string{"b": ab}, gains: true}, // from no view
			{target: abc, confirmed: ab, claims: map[string][]string{"b": ab, "c": abc}},
			{target: abc, confirmed: abc, claims: map[string][]string{"b": ab, "c": abc}},
			{target: abc, confirmed: abc, claims: map[string][]string{"b": abc, "c": abc}},
		}},
		{name: "c joins, seen by c", self: "c", steps: []step{
			{target: abc, confirmed: abc, claims: map[string][]string{"a": ab, "b": ab}, gains: true}, // from no view
			{target: abc, confirmed: abc, claims: map[string][]string{"a": abc, "b": ab}, gains: true},
			{target: abc, confirmed: abc, claims: map[string][]string{"a": abc, "b": abc}, gains: true},
		}},
		{name: "c is killed, seen by a", self: "a", steps: []step{
			{target: abc, confirmed: abc, claims: map[string][]string{"b": abc, "c": abc}, gains: true}, // from no view
			{target: ab, confirmed: abc, claims: map[string][]string{"b": abc}},
			{target: ab, confirmed: ab, claims: map[string][]string{"b": abc}, gains: true},
			{target: ab, confirmed: ab, claims: map[string][]string{"b": ab}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prev *view
			for i, s := range tt.steps {
				v := newView(nil, tt.self, s.target, s.confirmed, nil, s.claims, time.Hour)
				assert.Equal(t, s.gains, mayGain(prev, v), "step %d", i)
				prev = v
			}
		})
	}
}

// TestMayGainIsSound checks on random views that mayGain never denies a
// gain: no key is owned under the lists of a view and not under those of
// the view before when mayGain says so.
func TestMayGainIsSound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "c", "d", "e"}
	randomList := func() []string {
		var l []string
		for _, n := range names {
			if n == "a" || rng.IntN(2) == 0 {
				l = append(l, n)
			}
		}
		return l
	}
	randomView := func() *view {
		claims := map[string][]string{}
		for _, n := range names[1:] {
			if rng.IntN(2) == 0 {
				claims[n] = randomList()
			}
		}
		var inFlight [][]string
		if rng.IntN(3) == 0 {
			inFlight = append(inFlight, randomList())
		}
		return newView(nil, "a", randomList(), randomList(), inFlight, claims, time.Hour)
	}
	var denied int
	for range 3000 {
		from, to := randomView(), randomView()
		if mayGain(from, to) {
			continue
		}
		denied++
		for k := range 400 {
			h := hashKey(fmt.Sprintf("ns/key-%d", k))
			require.False(t, to.ownsByLists(h) && !from.ownsByLists(h), "mayGain denies that %q gives key-%d over %q", to.fingerprint, k, from.fingerprint)
		}
	}
	assert.Greater(t, denied, 300, "the random views exercise the proof")
}
