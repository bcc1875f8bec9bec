package shard

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestScaleModel models a group of 10 replicas sharing 100,000 keys: the
// split is even, and a member joining or leaving moves about 1/N of the keys,
// only to or from that member. The handoff pause of a moved key is the
// release (its in-flight reconcile returning) plus one Lease write by the old
// owner and its delivery to the new one; TestGroup measures it in process.
func TestScaleModel(t *testing.T) {
	const keys, replicas = 100000, 10
	members := make([]string, replicas)
	for i := range members {
		members[i] = fmt.Sprintf("foo-controller-%012x", i*7919)
	}
	joined := append(members[:replicas:replicas], "foo-controller-joined")
	left := members[1:]

	split := map[string]int{}
	movedJoin, movedLeave := 0, 0
	for i := range keys {
		key := fmt.Sprintf("ns-%d/foo-%d", i%50, i)
		owner := Assign(members, key)
		split[owner]++
		if after := Assign(joined, key); after != owner {
			movedJoin++
			assert.Equal(t, "foo-controller-joined", after, "a key moves only to the member that joined")
		}
		if after := Assign(left, key); after != owner {
			movedLeave++
			assert.Equal(t, members[0], owner, "only the keys of the member that left move")
		}
	}
	lo, hi := keys, 0
	for _, n := range split {
		lo, hi = min(lo, n), max(hi, n)
	}
	t.Logf("%d keys over %d replicas: %d to %d per replica (ideal %d)", keys, replicas, lo, hi, keys/replicas)
	t.Logf("a replica joins: %d keys move (%.2f%%, ideal 1/11 = %.2f%%); a replica leaves: %d move (%.2f%%, ideal 1/10)",
		movedJoin, 100*float64(movedJoin)/keys, 100.0/11, movedLeave, 100*float64(movedLeave)/keys)
	assert.InDelta(t, keys/replicas, lo, keys/replicas*0.05)
	assert.InDelta(t, keys/replicas, hi, keys/replicas*0.05)
	assert.InDelta(t, float64(keys)/11, float64(movedJoin), float64(keys)/11*0.05)
	assert.Equal(t, split[members[0]], movedLeave)
}

// BenchmarkOwns measures the ownership check a Controller makes for every
// add and every reconcile, in a steady state and during a handoff (three
// distinct member lists to check), with 10 members.
func BenchmarkOwns(b *testing.B) {
	members := make([]string, 10)
	for i := range members {
		members[i] = fmt.Sprintf("foo-controller-%012x", i)
	}
	old := members[:9]
	steady := map[string][]string{}
	handoff := map[string][]string{}
	for _, m := range members[1:] {
		steady[m] = members
		handoff[m] = old
	}
	handoff[members[5]] = members
	for _, tc := range []struct {
		name string
		v    *view
	}{
		{"steady", newView(nil, members[0], members, members, nil, steady, time.Hour)},
		{"handoff", newView(nil, members[0], members, old, nil, handoff, time.Hour)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			keys := make([]string, 1024)
			for i := range keys {
				keys[i] = fmt.Sprintf("default/foo-%d", i)
			}
			for i := 0; b.Loop(); i++ {
				tc.v.owns(hashKey(keys[i%len(keys)]))
			}
		})
	}
}
