// Command benchreport turns `go test -bench` output into markdown tables:
// one table per metric, one row per peer, one column per remaining
// sub-benchmark configuration, each cell the median over all runs with the
// spread of the runs and the ratio to the best (lowest) peer of its column.
// It can also check goals that compare two peers.
//
// With -summary it writes a single table for the benchmark instead: one row
// per remaining sub-benchmark configuration and peer, one column per
// metric, each cell the median and its ratio to the best peer of the same
// configuration (or the difference, for the metrics of -diff). The best
// cells are in bold in both forms.
//
// Every metric is taken to be lower-is-better, which holds for time,
// allocations, latency and memory.
//
// Usage:
//
//	benchreport -peer impl -metrics ns/key,allocs/key \
//		-goal 'ns/key:ctrlkit<=1.10*handwritten' loop.txt
//	benchreport -summary -peer impl -metrics ns/key,allocs/key loop.txt
//
// The output goes to standard output.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ", ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	peerKey := flag.String("peer", "impl", "sub-benchmark key whose values are the peers (table rows)")
	metricList := flag.String("metrics", "", "comma-separated metrics to tabulate, in order (default: all but ns/op)")
	diffList := flag.String("diff", "", "comma-separated metrics whose cells show the difference to the best peer instead of the ratio (for values near zero)")
	summary := flag.Bool("summary", false, "write one table with a column per metric instead of a table per metric (no goals)")
	var goals multiFlag
	flag.Var(&goals, "goal", "goal to check, `metric:A<=F*B` or metric:A<B (repeatable)")
	flag.Parse()
	if flag.NArg() == 0 || (*summary && len(goals) > 0) {
		fmt.Fprintln(os.Stderr, "usage: benchreport [-peer key] [-metrics m1,m2] [-diff m1,m2] [-goal g]... file...")
		fmt.Fprintln(os.Stderr, "       benchreport -summary [-peer key] [-metrics m1,m2] [-diff m1,m2] file...")
		os.Exit(2)
	}
	var results []result
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fail(err)
		}
		rs, err := parse(f)
		f.Close()
		if err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
		results = append(results, rs...)
	}
	var metrics []string
	if *metricList != "" {
		metrics = strings.Split(*metricList, ",")
	}
	t, err := build(results, *peerKey)
	if err != nil {
		fail(err)
	}
	var diff []string
	if *diffList != "" {
		diff = strings.Split(*diffList, ",")
	}
	if *summary {
		if err := t.writeSummary(os.Stdout, metrics, diff); err != nil {
			fail(err)
		}
		return
	}
	if err := t.writeMarkdown(os.Stdout, metrics, diff); err != nil {
		fail(err)
	}
	if len(goals) > 0 {
		if err := t.writeGoals(os.Stdout, goals); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchreport:", err)
	os.Exit(1)
}

// result is one benchmark line.
type result struct {
	base   string             // benchmark name without sub-benchmark parts
	config []kv               // sub-benchmark key=value parts, in order
	values map[string]float64 // metric -> value
	units  []string           // metrics in the order of the line
}

type kv struct{ key, value string }

// parse reads benchmark lines ("BenchmarkX/k=v-2  N  1.5 unit ...") and
// ignores every other line.
func parse(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue
		}
		res := result{values: map[string]float64{}}
		name := trimProcs(strings.TrimPrefix(fields[0], "Benchmark"))
		parts := strings.Split(name, "/")
		res.base = parts[0]
		for _, p := range parts[1:] {
			k, v, ok := strings.Cut(p, "=")
			if !ok {
				k, v = "", p
			}
			res.config = append(res.config, kv{k, v})
		}
		for i := 2; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("value %q of %s: %w", fields[i], fields[0], err)
			}
			res.values[fields[i+1]] = v
			res.units = append(res.units, fields[i+1])
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// trimProcs removes the "-N" GOMAXPROCS suffix of a benchmark name.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 || i == len(name)-1 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// table holds the samples of one benchmark, by column, peer and metric.
type table struct {
	base    string
	peerKey string
	peers   []string // in order of first appearance
	columns []string // remaining configuration, in order of first appearance
	metrics []string // in order of first appearance
	samples map[cell]map[string][]float64
}

type cell struct{ column, peer string }

func build(results []result, peerKey string) (*table, error) {
	if len(results) == 0 {
		return nil, errors.New("no benchmark results")
	}
	t := &table{base: results[0].base, peerKey: peerKey, samples: map[cell]map[string][]float64{}}
	for _, r := range results {
		if r.base != t.base {
			return nil, fmt.Errorf("results of more than one benchmark (%s and %s); report them separately", t.base, r.base)
		}
		peer := ""
		var rest []string
		for _, c := range r.config {
			if c.key == peerKey {
				peer = c.value
				continue
			}
			if c.key == "" {
				rest = append(rest, c.value)
			} else {
				rest = append(rest, c.key+"="+c.value)
			}
		}
		if peer == "" {
			return nil, fmt.Errorf("benchmark %s has no %s= part", r.base, peerKey)
		}
		column := strings.Join(rest, "/")
		if !slices.Contains(t.peers, peer) {
			t.peers = append(t.peers, peer)
		}
		if !slices.Contains(t.columns, column) {
			t.columns = append(t.columns, column)
		}
		c := cell{column, peer}
		if t.samples[c] == nil {
			t.samples[c] = map[string][]float64{}
		}
		for _, u := range r.units {
			if !slices.Contains(t.metrics, u) {
				t.metrics = append(t.metrics, u)
			}
			t.samples[c][u] = append(t.samples[c][u], r.values[u])
		}
	}
	return t, nil
}

// median returns the median of xs (the mean of the middle two for an even
// count) and whether there were any.
func median(xs []float64) (float64, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2], true
	}
	return (s[n/2-1] + s[n/2]) / 2, true
}

// spread returns the largest relative deviation of any sample from m.
func spread(xs []float64, m float64) float64 {
	if m == 0 {
		return 0
	}
	var d float64
	for _, x := range xs {
		d = max(d, math.Abs(x-m)/math.Abs(m))
	}
	return d
}

// format prints v with about three significant digits, without exponents
// for large values.
func format(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 0.995 || a == 0:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
}

func (t *table) median(column, peer, metric string) (float64, bool) {
	return median(t.samples[cell{column, peer}][metric])
}

// best returns the lowest median of metric in column.
func (t *table) best(column, metric string) (float64, bool) {
	best, found := 0.0, false
	for _, p := range t.peers {
		if m, ok := t.median(column, p, metric); ok && (!found || m < best) {
			best, found = m, true
		}
	}
	return best, found
}

// selectMetrics returns metrics, or when it is empty every metric of the
// benchmark but ns/op, and an error naming a metric the benchmark does not
// report.
func (t *table) selectMetrics(metrics []string) ([]string, error) {
	if len(metrics) == 0 {
		for _, m := range t.metrics {
			if m != "ns/op" {
				metrics = append(metrics, m)
			}
		}
	}
	for _, m := range metrics {
		if !slices.Contains(t.metrics, m) {
			return nil, fmt.Errorf("benchmark %s reports no %s", t.base, m)
		}
	}
	return metrics, nil
}

// cellText is the cell of peer in column for metric: the median, followed
// when detail is set by the largest deviation of a run and the number of
// runs; in bold and marked best when it is the lowest median of the column,
// else followed by its ratio to the best one (its difference from it for a
// metric in diff; nothing when the best is not positive). A peer without
// samples gets a dash.
func (t *table) cellText(column, peer, metric string, diff []string, detail bool) string {
	xs := t.samples[cell{column, peer}][metric]
	m, ok := median(xs)
	if !ok {
		return "–"
	}
	best, _ := t.best(column, metric)
	text := format(m)
	if detail {
		text = fmt.Sprintf("%s ±%.0f%% (n=%d)", text, 100*spread(xs, m), len(xs))
	}
	switch {
	case m == best:
		return fmt.Sprintf("**%s**, best", text)
	case slices.Contains(diff, metric):
		return fmt.Sprintf("%s, +%s", text, format(m-best))
	case best > 0:
		return fmt.Sprintf("%s, %.2f×", text, m/best)
	}
	return text
}

// writeMarkdown writes one table per metric; metrics in diff show the
// difference to the best peer rather than the ratio.
func (t *table) writeMarkdown(w io.Writer, metrics, diff []string) error {
	metrics, err := t.selectMetrics(metrics)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	for _, metric := range metrics {
		relation := "ratio to"
		if slices.Contains(diff, metric) {
			relation = "difference from"
		}
		fmt.Fprintf(bw, "**%s** (median of runs ±largest deviation of a run; %s the best peer; lower is better)\n\n", metric, relation)
		fmt.Fprintf(bw, "| %s |", t.peerKey)
		for _, c := range t.columns {
			if c == "" {
				c = metric
			}
			fmt.Fprintf(bw, " %s |", c)
		}
		fmt.Fprint(bw, "\n|---|")
		for range t.columns {
			fmt.Fprint(bw, "---:|")
		}
		fmt.Fprintln(bw)
		for _, p := range t.peers {
			fmt.Fprintf(bw, "| %s |", p)
			for _, c := range t.columns {
				fmt.Fprintf(bw, " %s |", t.cellText(c, p, metric, diff, true))
			}
			fmt.Fprintln(bw)
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}

// writeSummary writes one table: a line saying what the cells hold, then
// one row per configuration (the remaining sub-benchmark parts, in a first
// column unless the benchmark has none) and peer, skipping peers without
// samples in a configuration, and one column per metric, each cell as
// cellText without the deviation and count, which the line gives instead.
func (t *table) writeSummary(w io.Writer, metrics, diff []string) error {
	metrics, err := t.selectMetrics(metrics)
	if err != nil {
		return err
	}
	configured := len(t.columns) > 1 || t.columns[0] != ""
	minRuns, maxRuns := 0, 0
	var diffs []string
	for _, metric := range metrics {
		if slices.Contains(diff, metric) {
			diffs = append(diffs, metric)
		}
		for _, samples := range t.samples {
			if n := len(samples[metric]); n > 0 {
				if minRuns == 0 || n < minRuns {
					minRuns = n
				}
				maxRuns = max(maxRuns, n)
			}
		}
	}
	runs := fmt.Sprintf("%d runs", maxRuns)
	switch {
	case minRuns != maxRuns:
		runs = fmt.Sprintf("%d to %d runs", minRuns, maxRuns)
	case maxRuns == 1:
		runs = "1 run"
	}
	relation := "its ratio to the best peer"
	if configured {
		relation += " of the same configuration"
	}
	if len(diffs) > 0 {
		relation += fmt.Sprintf(" (for %s, its difference from it)", strings.Join(diffs, ", "))
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Each cell: the median of %s and %s; lower is better.\n\n", runs, relation)
	if configured {
		fmt.Fprint(bw, "| configuration ")
	}
	fmt.Fprintf(bw, "| %s |", t.peerKey)
	for _, m := range metrics {
		fmt.Fprintf(bw, " %s |", m)
	}
	fmt.Fprint(bw, "\n")
	if configured {
		fmt.Fprint(bw, "|---")
	}
	fmt.Fprint(bw, "|---|")
	for range metrics {
		fmt.Fprint(bw, "---:|")
	}
	fmt.Fprintln(bw)
	for _, c := range t.columns {
		for _, p := range t.peers {
			if t.samples[cell{c, p}] == nil {
				continue
			}
			if configured {
				fmt.Fprintf(bw, "| %s ", c)
			}
			fmt.Fprintf(bw, "| %s |", p)
			for _, m := range metrics {
				fmt.Fprintf(bw, " %s |", t.cellText(c, p, m, diff, false))
			}
			fmt.Fprintln(bw)
		}
	}
	fmt.Fprintln(bw)
	return bw.Flush()
}

// goal is "metric:A<=F*B" or "metric:A<B" (F defaults to 1).
type goal struct {
	metric, a, b string
	factor       float64
	strict       bool
}

func parseGoal(s string) (goal, error) {
	metric, expr, ok := strings.Cut(s, ":")
	if !ok {
		return goal{}, fmt.Errorf("goal %q: want metric:A<=F*B or metric:A<B", s)
	}
	g := goal{metric: metric, factor: 1}
	var rhs string
	if a, r, ok := strings.Cut(expr, "<="); ok {
		g.a, rhs = a, r
	} else if a, r, ok := strings.Cut(expr, "<"); ok {
		g.a, rhs, g.strict = a, r, true
	} else {
		return goal{}, fmt.Errorf("goal %q: no < or <=", s)
	}
	if f, b, ok := strings.Cut(rhs, "*"); ok {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return goal{}, fmt.Errorf("goal %q: factor: %w", s, err)
		}
		g.factor, rhs = v, b
	}
	g.b = rhs
	if g.a == "" || g.b == "" {
		return goal{}, fmt.Errorf("goal %q: empty peer", s)
	}
	return g, nil
}

func (g goal) String() string {
	op := "≤"
	if g.strict {
		op = "<"
	}
	if g.factor == 1 {
		return fmt.Sprintf("%s %s %s", g.a, op, g.b)
	}
	return fmt.Sprintf("%s %s %.2f× %s", g.a, op, g.factor, g.b)
}

func (t *table) writeGoals(w io.Writer, goals []string) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "Goals (on medians):")
	fmt.Fprintln(bw)
	for _, s := range goals {
		g, err := parseGoal(s)
		if err != nil {
			return err
		}
		for _, c := range t.columns {
			a, okA := t.median(c, g.a, g.metric)
			b, okB := t.median(c, g.b, g.metric)
			if !okA || !okB {
				return fmt.Errorf("goal %q: no %s for %s and %s in %q", s, g.metric, g.a, g.b, c)
			}
			limit := g.factor * b
			met := a <= limit
			if g.strict {
				met = a < limit
			}
			verdict := "**met**"
			if !met {
				verdict = "**not met**"
			}
			where := ""
			if c != "" {
				where = " (" + c + ")"
			}
			ratio := "n/a"
			if b != 0 {
				ratio = fmt.Sprintf("%.2f×", a/b)
			}
			fmt.Fprintf(bw, "- %s%s, goal %s: %s = %s, %s = %s, ratio %s: %s\n",
				g.metric, where, g, g.a, format(a), g.b, format(b), ratio, verdict)
		}
	}
	fmt.Fprintln(bw)
	return bw.Flush()
}
