package otlp

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// spanKey identifies a span across traces.
type spanKey struct {
	trace TraceID
	span  SpanID
}

func keyOf(s Span) spanKey { return spanKey{s.TraceID, s.SpanID} }

// Trace is a set of spans put together: one trace ID's (Receiver.Trace) or
// several connected by links (Receiver.LinkedTrace). A span received twice
// (an export retried) is in it once. The zero Trace is empty.
type Trace struct {
	// Spans are ordered by start time (then trace and span ID).
	Spans []Span
	byKey map[spanKey]int
}

// newTrace orders the spans and drops repeats.
func newTrace(spans []Span) Trace {
	t := Trace{byKey: make(map[spanKey]int, len(spans))}
	for _, s := range spans {
		if _, dup := t.byKey[keyOf(s)]; dup {
			continue
		}
		t.byKey[keyOf(s)] = -1
		t.Spans = append(t.Spans, s)
	}
	slices.SortStableFunc(t.Spans, func(a, b Span) int {
		return cmp.Or(a.Start.Compare(b.Start), strings.Compare(a.TraceID.String(), b.TraceID.String()), strings.Compare(a.SpanID.String(), b.SpanID.String()))
	})
	for i, s := range t.Spans {
		t.byKey[keyOf(s)] = i
	}
	return t
}

// Span returns the span (traceID, spanID) if it is in the trace.
func (t Trace) Span(traceID TraceID, spanID SpanID) (Span, bool) {
	i, ok := t.byKey[spanKey{traceID, spanID}]
	if !ok {
		return Span{}, false
	}
	return t.Spans[i], true
}

// Find returns the spans that match all of matches, in the trace's order.
func (t Trace) Find(matches ...Match) []Span { return filter(t.Spans, matches) }

// TraceIDs returns the trace IDs of the spans, in the order of their first
// span.
func (t Trace) TraceIDs() []TraceID {
	var ids []TraceID
	for _, s := range t.Spans {
		if !slices.Contains(ids, s.TraceID) {
			ids = append(ids, s.TraceID)
		}
	}
	return ids
}

// Roots returns the spans whose parent is not in the trace: the roots of
// their traces, and spans whose parent was not (yet) received or belongs
// to a process that does not export.
func (t Trace) Roots() []Span {
	var out []Span
	for _, s := range t.Spans {
		if _, ok := t.Parent(s); !ok {
			out = append(out, s)
		}
	}
	return out
}

// Parent returns the span's parent if it is in the trace.
func (t Trace) Parent(s Span) (Span, bool) {
	if s.IsRoot() {
		return Span{}, false
	}
	return t.Span(s.TraceID, s.ParentSpanID)
}

// Children returns the spans whose parent is s.
func (t Trace) Children(s Span) []Span { return t.Find(ChildOf(s.TraceID, s.SpanID)) }

// IsDescendant reports whether s is a child, grandchild, ... of ancestor.
// Parent IDs that form a cycle end the walk.
func (t Trace) IsDescendant(s, ancestor Span) bool {
	steps := 0
	for p, ok := t.Parent(s); ok && steps < len(t.Spans); p, ok = t.Parent(p) {
		if keyOf(p) == keyOf(ancestor) {
			return true
		}
		steps++
	}
	return false
}

// Descendants returns the spans below s, in the trace's order.
func (t Trace) Descendants(s Span) []Span {
	return t.Find(func(d Span) bool { return t.IsDescendant(d, s) })
}

// LinkedFrom returns the spans that link to s.
func (t Trace) LinkedFrom(s Span) []Span { return t.Find(LinksTo(s.TraceID, s.SpanID)) }

// Linked returns the spans of the trace that s links to, in the order of
// its links.
func (t Trace) Linked(s Span) []Span {
	var out []Span
	for _, l := range s.Links {
		if ls, ok := t.Span(l.TraceID, l.SpanID); ok {
			out = append(out, ls)
		}
	}
	return out
}

// String draws the trace as trees, one per root, each span on a line with
// its service, name, kind, start (relative to the first span) and
// duration; a link follows its span as "~> service name" (or the IDs of a
// span not in the trace).
func (t Trace) String() string {
	if len(t.Spans) == 0 {
		return "(no spans)\n"
	}
	var b strings.Builder
	first := t.Spans[0].Start
	drawn := map[spanKey]bool{}
	var draw func(s Span, depth int)
	draw = func(s Span, depth int) {
		if drawn[keyOf(s)] {
			return
		}
		drawn[keyOf(s)] = true
		indent := strings.Repeat("  ", depth)
		fmt.Fprintf(&b, "%s- %s %q (%s) +%s %s [%s/%s]", indent, s.Service, s.Name, s.Kind,
			s.Start.Sub(first).Round(time.Millisecond), s.End.Sub(s.Start).Round(time.Microsecond), s.TraceID, s.SpanID)
		if s.Status.Message != "" {
			fmt.Fprintf(&b, " status %s %q", s.Status.Code, s.Status.Message)
		}
		b.WriteString("\n")
		for _, l := range s.Links {
			if ls, ok := t.Span(l.TraceID, l.SpanID); ok {
				fmt.Fprintf(&b, "%s    ~> %s %q [%s/%s]\n", indent, ls.Service, ls.Name, l.TraceID, l.SpanID)
			} else {
				fmt.Fprintf(&b, "%s    ~> (not received) [%s/%s]\n", indent, l.TraceID, l.SpanID)
			}
		}
		for _, c := range t.Children(s) {
			draw(c, depth+1)
		}
	}
	for _, r := range t.Roots() {
		draw(r, 0)
	}
	// Spans whose parent IDs form a cycle have no root above them.
	for _, s := range t.Spans {
		draw(s, 0)
	}
	return b.String()
}

// linkedClosure returns the spans of the trace id and of every trace
// connected to it by links, in either direction, transitively.
func linkedClosure(spans []Span, id TraceID) []Span {
	in := map[TraceID]bool{id: true}
	for grew := true; grew; {
		grew = false
		for _, s := range spans {
			for _, l := range s.Links {
				switch {
				case in[s.TraceID] && !in[l.TraceID]:
					in[l.TraceID], grew = true, true
				case in[l.TraceID] && !in[s.TraceID]:
					in[s.TraceID], grew = true, true
				}
			}
		}
	}
	return filter(spans, []Match{func(s Span) bool { return in[s.TraceID] }})
}
