package shard

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// hashKey is the 64-bit FNV-1a hash of a key's string form.
func hashKey(s string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}

// weight is a member's rendezvous weight for a key: the member's seed and
// the key's hash, mixed by the SplitMix64 finaliser so that every bit of
// both moves the result.
func weight(seed, key uint64) uint64 {
	z := seed ^ key
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Assign returns which of members owns key (its string form) by rendezvous
// hashing, the rule every member of a group applies; "" if members is
// empty. It is exported for tools and simulations that predict a group's
// split.
func Assign(members []string, key string) string {
	h := hashKey(key)
	best, owner := uint64(0), ""
	for _, m := range members {
		if w := weight(hashKey(m), h); owner == "" || w > best || (w == best && m < owner) {
			best, owner = w, m
		}
	}
	return owner
}

// member is one member of a list as a view checks it.
type member struct {
	name string
	seed uint64
	// self: this replica. claimant: another live member that published
	// this list, and so may be reconciling the keys the list gives it.
	self, claimant bool
}

// memberList is a list of members with the roles they play in a view.
type memberList struct {
	members []member
	// mustOwn: the list is this replica's current or confirmed published
	// list, so a key it may reconcile must be its own under it.
	mustOwn bool
}

// owner returns the index in l.members of the owner of a key hash.
func (l *memberList) owner(h uint64) int {
	best, idx := uint64(0), -1
	for i := range l.members {
		m := &l.members[i]
		if w := weight(m.seed, h); idx < 0 || w > best || (w == best && m.name < l.members[idx].name) {
			best, idx = w, i
		}
	}
	return idx
}

// view is an immutable snapshot of what this replica may reconcile.
type view struct {
	// lists are the distinct member lists to check, see owns.
	lists []memberList
	// fingerprint identifies the lists and their roles.
	fingerprint string
	// validUntil is the time on the membership's monotonic clock after
	// which no new claim may be made under this view.
	validUntil time.Duration
	// pending are the gains whose sharded caches have not been refreshed
	// yet: a key one of them gave this replica is not owned until then.
	pending []gain
}

// gain is a change of view that may give this replica keys, with the
// cache refresh that must complete before those keys are owned.
type gain struct {
	from, to *view // their lists only
	epoch    uint64
}

// blocks reports whether g gave the key with hash h to this replica.
func (g gain) blocks(h uint64) bool { return g.to.ownsByLists(h) && !g.from.ownsByLists(h) }

// listsOnly returns a view with v's lists only (nil for nil).
func (v *view) listsOnly() *view {
	if v == nil {
		return nil
	}
	return &view{lists: v.lists, fingerprint: v.fingerprint}
}

// id identifies v's lists and their roles ("<none>" for nil).
func (v *view) id() string {
	if v == nil {
		return "<none>"
	}
	return v.fingerprint
}

// owns reports whether a key with hash h may be reconciled: it must belong
// to this replica under the list it works under, under the list it
// published and saw confirmed, and under every list it sent that may
// still land; and to no other live member under the list that member
// published. A nil view owns nothing.
func (v *view) owns(h uint64) bool {
	if !v.ownsByLists(h) {
		return false
	}
	for _, g := range v.pending {
		if g.blocks(h) {
			return false
		}
	}
	return true
}

// wants reports whether the key with hash h is this replica's under the
// list it works under: its caches keep the objects of such keys, a
// superset of those it owns.
func (v *view) wants(h uint64) bool {
	if v == nil || len(v.lists) == 0 {
		return false
	}
	l := &v.lists[0] // newView puts the target first
	o := l.owner(h)
	return o >= 0 && l.members[o].self
}

// ownsByLists is owns without the pending gains.
func (v *view) ownsByLists(h uint64) bool {
	if v == nil {
		return false
	}
	for i := range v.lists {
		l := &v.lists[i]
		o := l.owner(h)
		if o < 0 {
			return false
		}
		if m := &l.members[o]; (l.mustOwn && !m.self) || m.claimant {
			return false
		}
	}
	return true
}

// newView builds the view of replica self working under target, having
// published confirmed (nil: nothing confirmed yet, so nothing is owned)
// and sent the lists inFlight that may still land, with claims holding the
// list each other live member published. If prev has the same lists, the
// new view shares them.
func newView(prev *view, self string, target, confirmed []string, inFlight [][]string, claims map[string][]string, validUntil time.Duration) *view {
	if confirmed == nil {
		return nil
	}
	type entry struct {
		names     []string
		mustOwn   bool
		claimants []string
	}
	var entries []*entry
	find := func(names []string) *entry {
		for _, e := range entries {
			if slices.Equal(e.names, names) {
				return e
			}
		}
		e := &entry{names: names}
		entries = append(entries, e)
		return e
	}
	find(target).mustOwn = true
	find(confirmed).mustOwn = true
	for _, l := range inFlight {
		find(l).mustOwn = true
	}
	for _, name := range sortedKeys(claims) {
		if names := claims[name]; slices.Contains(names, name) {
			e := find(names)
			e.claimants = append(e.claimants, name)
		}
	}
	var fp strings.Builder
	for _, e := range entries {
		for i, n := range e.names {
			if i > 0 {
				fp.WriteByte(',')
			}
			fp.WriteString(n)
		}
		if e.mustOwn {
			fp.WriteByte('!')
		}
		fp.WriteByte('/')
		for i, n := range e.claimants {
			if i > 0 {
				fp.WriteByte(',')
			}
			fp.WriteString(n)
		}
		fp.WriteByte(';')
	}
	if prev != nil && prev.fingerprint == fp.String() {
		// The same lists: share them, valid for longer.
		v := *prev
		v.validUntil = validUntil
		return &v
	}
	v := &view{validUntil: validUntil, fingerprint: fp.String()}
	for _, e := range entries {
		l := memberList{mustOwn: e.mustOwn, members: make([]member, 0, len(e.names))}
		for _, n := range e.names {
			l.members = append(l.members, member{name: n, seed: hashKey(n), self: n == self, claimant: slices.Contains(e.claimants, n)})
		}
		v.lists = append(v.lists, l)
	}
	return v
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// mayGain reports whether some key owned under to's lists is not owned
// under from's, judged from the lists alone (false means certainly not).
// It proves "no gain" when every constraint of from follows from those of
// to: this replica winning among the members of to's lists it must own
// keys under beats each of those members, which implies that it wins
// among any list of from holding itself and only such members, and that
// no such member wins there.
func mayGain(from, to *view) bool {
	if to == nil {
		return false
	}
	if from == nil {
		return true
	}
	beaten := map[string]bool{} // members this replica beats for every key it owns under to
	self := ""
	for _, l := range to.lists {
		if !l.mustOwn {
			continue
		}
		hasSelf := false
		for _, m := range l.members {
			hasSelf = hasSelf || m.self
		}
		if !hasSelf {
			return false // to owns nothing
		}
		for _, m := range l.members {
			if m.self {
				self = m.name
			} else {
				beaten[m.name] = true
			}
		}
	}
	for _, l := range from.lists {
		if implied(l, to.lists, self, beaten) {
			continue
		}
		return true
	}
	return false
}

// implied reports whether the constraint of list l follows from lists.
func implied(l memberList, lists []memberList, self string, beaten map[string]bool) bool {
	hasSelf := false
	for _, m := range l.members {
		hasSelf = hasSelf || m.name == self
	}
	if hasSelf {
		covered := true
		for _, m := range l.members {
			// A member this replica beats cannot win l; if it must own
			// under l, it must beat every other member of l.
			if m.name != self && !beaten[m.name] && (l.mustOwn || m.claimant) {
				covered = false
			}
		}
		if covered {
			return true
		}
	}
	// The same list with at least the same roles.
	for _, n := range lists {
		if !sameMembers(l, n) || (l.mustOwn && !n.mustOwn) {
			continue
		}
		if n.mustOwn && hasSelf {
			return true
		}
		ok := !l.mustOwn
		for i, m := range l.members {
			if m.claimant && !n.members[i].claimant {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func sameMembers(a, b memberList) bool {
	return slices.EqualFunc(a.members, b.members, func(x, y member) bool { return x.name == y.name })
}
