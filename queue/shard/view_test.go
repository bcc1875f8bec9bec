package shard

import (
	"fmt"
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
