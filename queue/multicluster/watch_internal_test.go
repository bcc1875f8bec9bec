package multicluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The watcher keeps one pending change per member, oldest first, and a
// change taken but not delivered goes back to the front unless a newer
// one is pending.
func TestMemberWatchCoalesces(t *testing.T) {
	tests := []struct {
		name string
		ops  func(w *memberWatch) []string // returns the names taken
		want []string                      // all names taken, in order
	}{
		{
			name: "one per member, oldest first",
			ops: func(w *memberWatch) []string {
				w.note("a")
				w.note("b")
				w.note("a")
				w.note("c")
				w.note("b")
				return nil
			},
			want: []string{"a", "b", "c"},
		},
		{
			name: "a change after a take is pending again",
			ops: func(w *memberWatch) []string {
				w.note("a")
				taken, _ := w.next()
				w.note("a")
				return []string{taken}
			},
			want: []string{"a", "a"},
		},
		{
			name: "put back goes first",
			ops: func(w *memberWatch) []string {
				w.note("a")
				w.note("b")
				taken, _ := w.next()
				w.putBack(taken)
				return nil
			},
			want: []string{"a", "b"},
		},
		{
			name: "put back of a member noted again keeps the newer place",
			ops: func(w *memberWatch) []string {
				w.note("a")
				w.note("b")
				taken, _ := w.next()
				w.note("a")
				w.putBack(taken)
				return nil
			},
			want: []string{"b", "a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &memberWatch{queued: map[string]bool{}, wake: make(chan struct{}, 1)}
			got := tt.ops(w)
			for {
				name, ok := w.next()
				if !ok {
					break
				}
				got = append(got, name)
			}
			assert.Equal(t, tt.want, got)
			assert.Empty(t, w.queued)
		})
	}
}
