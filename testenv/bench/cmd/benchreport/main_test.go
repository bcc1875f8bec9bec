package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `goos: linux
goarch: amd64
pkg: example
BenchmarkLoop/workers=1/impl=a-2   	 3	 1.000 allocs/key	 100.0 ns/key	 0 ns/op
BenchmarkLoop/workers=1/impl=b-2   	 3	 2.000 allocs/key	 150.0 ns/key	 0 ns/op
BenchmarkLoop/workers=2/impl=a-2   	 3	 1.000 allocs/key	 300.0 ns/key	 0 ns/op
BenchmarkLoop/workers=2/impl=b-2   	 3	 2.000 allocs/key	 200.0 ns/key	 0 ns/op
BenchmarkLoop/workers=1/impl=a-2   	 3	 1.000 allocs/key	 120.0 ns/key	 0 ns/op
BenchmarkLoop/workers=1/impl=b-2   	 3	 2.000 allocs/key	 160.0 ns/key	 0 ns/op
BenchmarkLoop/workers=2/impl=a-2   	 3	 1.000 allocs/key	 320.0 ns/key	 0 ns/op
BenchmarkLoop/workers=2/impl=b-2   	 3	 2.000 allocs/key	 220.0 ns/key	 0 ns/op
PASS
ok  	example	1.0s
`

func TestParse(t *testing.T) {
	rs, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	require.Len(t, rs, 8)
	assert.Equal(t, "Loop", rs[0].base)
	assert.Equal(t, []kv{{"workers", "1"}, {"impl", "a"}}, rs[0].config)
	assert.Equal(t, map[string]float64{"allocs/key": 1, "ns/key": 100, "ns/op": 0}, rs[0].values)
	assert.Equal(t, []string{"allocs/key", "ns/key", "ns/op"}, rs[0].units)
}

func TestParseRejectsBadValues(t *testing.T) {
	_, err := parse(strings.NewReader("BenchmarkX-2 1 abc ns/op\n"))
	assert.Error(t, err)
}

func TestTrimProcs(t *testing.T) {
	tests := map[string]string{
		"Loop/impl=a-2":          "Loop/impl=a",
		"Loop/impl=a-b":          "Loop/impl=a-b",
		"Loop/impl=client-go-16": "Loop/impl=client-go",
		"Loop":                   "Loop",
		"Loop-":                  "Loop-",
	}
	for in, want := range tests {
		assert.Equal(t, want, trimProcs(in), in)
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
		ok   bool
	}{
		{nil, 0, false},
		{[]float64{3}, 3, true},
		{[]float64{3, 1, 2}, 2, true},
		{[]float64{4, 1, 3, 2}, 2.5, true},
	}
	for _, tt := range tests {
		got, ok := median(tt.in)
		assert.Equal(t, tt.ok, ok)
		assert.Equal(t, tt.want, got)
	}
}

func TestFormat(t *testing.T) {
	tests := map[float64]string{
		4722723: "4722723",
		725.4:   "725",
		51.25:   "51.2",
		1.007:   "1.01",
		0:       "0.00",
		0.0074:  "0.0074",
		0.999:   "1.00",
		0.5:     "0.5",
	}
	for in, want := range tests {
		assert.Equal(t, want, format(in), "%v", in)
	}
}

func TestParseGoal(t *testing.T) {
	tests := []struct {
		in      string
		want    goal
		wantErr bool
	}{
		{in: "ns/key:a<=1.10*b", want: goal{metric: "ns/key", a: "a", b: "b", factor: 1.10}},
		{in: "ns/key:a<b", want: goal{metric: "ns/key", a: "a", b: "b", factor: 1, strict: true}},
		{in: "p99-µs:a<=b", want: goal{metric: "p99-µs", a: "a", b: "b", factor: 1}},
		{in: "a<b", wantErr: true},
		{in: "m:a=b", wantErr: true},
		{in: "m:a<=x*b", wantErr: true},
		{in: "m:<b", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseGoal(tt.in)
		if tt.wantErr {
			assert.Error(t, err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

func TestWriteMarkdownAndGoals(t *testing.T) {
	rs, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	tbl, err := build(rs, "impl")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, tbl.peers)
	assert.Equal(t, []string{"workers=1", "workers=2"}, tbl.columns)

	var buf bytes.Buffer
	require.NoError(t, tbl.writeMarkdown(&buf, []string{"ns/key", "allocs/key"}, []string{"allocs/key"}))
	out := buf.String()
	assert.Contains(t, out, "| impl | workers=1 | workers=2 |")
	// a: medians 110 and 310; b: 155 and 210.
	assert.Contains(t, out, "| a | **110 ±9% (n=2)**, best | 310 ±3% (n=2), 1.48× |")
	assert.Contains(t, out, "| b | 155 ±3% (n=2), 1.41× | **210 ±5% (n=2)**, best |")
	assert.Contains(t, out, "| b | 2.00 ±0% (n=2), +1.00 | 2.00 ±0% (n=2), +1.00 |")
	assert.Less(t, strings.Index(out, "**ns/key**"), strings.Index(out, "**allocs/key**"), "metrics in the requested order")

	buf.Reset()
	require.NoError(t, tbl.writeGoals(&buf, []string{"ns/key:a<=1.10*b", "ns/key:b<a"}))
	out = buf.String()
	assert.Contains(t, out, "- ns/key (workers=1), goal a ≤ 1.10× b: a = 110, b = 155, ratio 0.71×: **met**")
	assert.Contains(t, out, "- ns/key (workers=2), goal a ≤ 1.10× b: a = 310, b = 210, ratio 1.48×: **not met**")
	assert.Contains(t, out, "- ns/key (workers=1), goal b < a: b = 155, a = 110, ratio 1.41×: **not met**")

	assert.Error(t, tbl.writeMarkdown(&buf, []string{"B/op"}, nil), "unknown metric")
	assert.Error(t, tbl.writeGoals(&buf, []string{"ns/key:a<c"}), "unknown peer")
}

func TestBuildRejectsMixedBenchmarksAndMissingPeer(t *testing.T) {
	rs, err := parse(strings.NewReader("BenchmarkA/impl=x-2 1 1 ns/op\nBenchmarkB/impl=x-2 1 1 ns/op\n"))
	require.NoError(t, err)
	_, err = build(rs, "impl")
	assert.Error(t, err)

	rs, err = parse(strings.NewReader("BenchmarkA/mode=x-2 1 1 ns/op\n"))
	require.NoError(t, err)
	_, err = build(rs, "impl")
	assert.Error(t, err)

	_, err = build(nil, "impl")
	assert.Error(t, err)
}

func TestWriteSummary(t *testing.T) {
	const convergence = `BenchmarkConvergence/foos=1000/impl=ctrlkit-2 1 40 converge-s 4 cpu-s
BenchmarkConvergence/foos=1000/impl=floor-2 1 30 converge-s
BenchmarkConvergence/foos=1000/impl=ctrlkit-2 1 38 converge-s 5 cpu-s
BenchmarkConvergence/foos=1000/impl=floor-2 1 32 converge-s
BenchmarkConvergence/foos=1000/impl=ctrlkit-2 1 39 converge-s 4.5 cpu-s
BenchmarkConvergence/foos=1000/impl=floor-2 1 31 converge-s
BenchmarkConvergence/foos=1000/impl=cr-2 1 48 converge-s 6 cpu-s
BenchmarkConvergence/foos=10000/impl=ctrlkit-2 1 579 converge-s 46.7 cpu-s
BenchmarkConvergence/foos=10000/impl=floor-2 1 460 converge-s
`
	const memory = `BenchmarkInformerMemory/transform=none-2 1 4073 B/object 5235 inuse-B/object 0 ns/op
BenchmarkInformerMemory/transform=strip-2 1 2673 B/object 3936 inuse-B/object 0 ns/op
`
	const startup = `BenchmarkStart/api-server-only-2 5 304.7 median-rss-MiB 3791 median-start-ms
BenchmarkStart/full-2 5 529.8 median-rss-MiB 4548 median-start-ms
`
	tests := []struct {
		name    string
		input   string
		peer    string
		metrics []string
		diff    []string
		want    string
	}{
		{
			name:    "configurations, a metric shown as difference",
			input:   sample,
			peer:    "impl",
			metrics: []string{"ns/key", "allocs/key"},
			diff:    []string{"allocs/key"},
			// a: ns/key medians 110 and 310; b: 155 and 210.
			want: `Each cell: the median of 2 runs and its ratio to the best peer of the same configuration (for allocs/key, its difference from it); lower is better.

| configuration | impl | ns/key | allocs/key |
|---|---|---:|---:|
| workers=1 | a | **110**, best | **1.00**, best |
| workers=1 | b | 155, 1.41× | 2.00, +1.00 |
| workers=2 | a | 310, 1.48× | **1.00**, best |
| workers=2 | b | **210**, best | 2.00, +1.00 |

`,
		},
		{
			name:    "configurations with different peers and run counts, a metric some peer lacks",
			input:   convergence,
			peer:    "impl",
			metrics: []string{"converge-s", "cpu-s"},
			// foos=1000: ctrlkit 39 (3 runs), floor 31 (3 runs), cr 48 (1 run);
			// cpu-s 4.5, none, 6. foos=10000: ctrlkit 579, floor 460; cr
			// was not run there and has no row.
			want: `Each cell: the median of 1 to 3 runs and its ratio to the best peer of the same configuration; lower is better.

| configuration | impl | converge-s | cpu-s |
|---|---|---:|---:|
| foos=1000 | ctrlkit | 39.0, 1.26× | **4.50**, best |
| foos=1000 | floor | **31.0**, best | – |
| foos=1000 | cr | 48.0, 1.55× | 6.00, 1.33× |
| foos=10000 | ctrlkit | 579, 1.26× | **46.7**, best |
| foos=10000 | floor | **460**, best | – |

`,
		},
		{
			name:  "no configuration, default metrics",
			input: memory,
			peer:  "transform",
			want: `Each cell: the median of 1 run and its ratio to the best peer; lower is better.

| transform | B/object | inuse-B/object |
|---|---:|---:|
| none | 4073, 1.52× | 5235, 1.33× |
| strip | **2673**, best | **3936**, best |

`,
		},
		{
			// One line per sub-benchmark: its -benchtime iterations are not runs.
			name:    "sub-benchmarks without a key as peers",
			input:   startup,
			peer:    "",
			metrics: []string{"median-start-ms", "median-rss-MiB"},
			want: `Each cell: the median of 1 run and its ratio to the best peer; lower is better.

|  | median-start-ms | median-rss-MiB |
|---|---:|---:|
| api-server-only | **3791**, best | **305**, best |
| full | 4548, 1.20× | 530, 1.74× |

`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := parse(strings.NewReader(tt.input))
			require.NoError(t, err)
			tbl, err := build(rs, tt.peer)
			require.NoError(t, err)
			var buf bytes.Buffer
			require.NoError(t, tbl.writeSummary(&buf, tt.metrics, tt.diff))
			assert.Equal(t, tt.want, buf.String())
		})
	}
}

func TestWriteSummaryRejectsUnknownMetric(t *testing.T) {
	rs, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	tbl, err := build(rs, "impl")
	require.NoError(t, err)
	var buf bytes.Buffer
	assert.Error(t, tbl.writeSummary(&buf, []string{"ns/key", "B/op"}, nil))
}
