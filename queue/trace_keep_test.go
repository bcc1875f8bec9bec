package queue

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/trace"

	"github.com/ctrlkit/ctrlkit/queue/tracing"
)

// TestTriggersKeptBeyondMax checks which triggers a key keeps once it has
// more than tracing.MaxTriggers: those linked to a sampled span, then
// those with a link, then the first ones, and always the latest.
func TestTriggersKeptBeyondMax(t *testing.T) {
	link := func(b byte, flags trace.TraceFlags) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{b}, SpanID: trace.SpanID{b}, TraceFlags: flags, Remote: true,
		})
	}
	none := func(name string) tracing.Trigger { return tracing.Trigger{Object: name} }
	sampled := func(name string) tracing.Trigger {
		return tracing.Trigger{Object: name, Link: link(1, trace.FlagsSampled)}
	}
	unsampled := func(name string) tracing.Trigger {
		return tracing.Trigger{Object: name, Link: link(2, 0)}
	}
	repeat := func(n int, mk func(string) tracing.Trigger, name string) []tracing.Trigger {
		ts := make([]tracing.Trigger, n)
		for i := range ts {
			ts[i] = mk(name)
		}
		return ts
	}
	cat := func(parts ...[]tracing.Trigger) []tracing.Trigger {
		var all []tracing.Trigger
		for _, p := range parts {
			all = append(all, p...)
		}
		return all
	}
	bound := tracing.MaxTriggers
	for _, tc := range []struct {
		name string
		in   []tracing.Trigger
		want map[string]int // kept triggers by object
		last string
	}{{
		name: "within the bound, all kept",
		in:   cat(repeat(bound-1, none, "n"), repeat(1, sampled, "s")),
		want: map[string]int{"n": bound - 1, "s": 1},
		last: "s",
	}, {
		name: "a sampled link after link-less ones",
		in:   cat(repeat(bound, none, "n"), repeat(1, sampled, "s")),
		want: map[string]int{"n": bound - 1, "s": 1},
		last: "s",
	}, {
		name: "a sampled link followed by link-less ones",
		in:   cat(repeat(1, sampled, "s"), repeat(3*bound, none, "n")),
		want: map[string]int{"n": bound - 1, "s": 1},
		last: "n",
	}, {
		name: "an unsampled link before the sampled one is dropped first",
		in:   cat(repeat(bound, unsampled, "u"), repeat(1, sampled, "s"), repeat(1, none, "n")),
		want: map[string]int{"u": bound - 2, "s": 1, "n": 1},
		last: "n",
	}, {
		name: "links kept ahead of link-less ones",
		in:   cat(repeat(2, unsampled, "u"), repeat(2*bound, none, "n"), repeat(2, sampled, "s")),
		want: map[string]int{"u": 2, "s": 2, "n": bound - 4},
		last: "s",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := &pendingTriggers{}
			for _, tr := range tc.in {
				p.keep(tr)
			}
			assert.LessOrEqual(t, len(p.kept), bound)
			got := map[string]int{}
			for _, tr := range p.kept {
				got[tr.Object]++
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.last, p.kept[len(p.kept)-1].Object, "the latest trigger is kept, last")
		})
	}
}
