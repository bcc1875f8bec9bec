package e2e

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The figures of BenchmarkConvergence come from /proc and from heap
// profiles; these run without a control plane.
func TestReadUsage(t *testing.T) {
	busy := make([]byte, 64<<20) // resident once written
	for i := range busy {
		busy[i] = byte(i)
	}
	u, err := readUsage(os.Getpid())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, u.peakRSS, int64(len(busy)), "the peak RSS covers what this test touched")
	assert.Positive(t, u.cpu, "writing 64 MiB takes CPU time")
	assert.Equal(t, byte(255), busy[255])

	_, err = readUsage(1 << 30)
	assert.Error(t, err, "no such process")
}

func TestParseHeapAlloc(t *testing.T) {
	tests := []struct {
		name    string
		profile string
		want    int64
		wantErr bool
	}{
		{name: "debug=1 profile", profile: "heap profile: 1: 2 [3: 4] @ heap/1048576\n\n# runtime.MemStats\n# Alloc = 123\n# TotalAlloc = 999\n# HeapAlloc = 4567\n# HeapSys = 8000\n", want: 4567},
		{name: "none", profile: "heap profile: 1: 2 [3: 4] @ heap/1048576\n", wantErr: true},
		{name: "not a number", profile: "# HeapAlloc = many\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseHeapAlloc(tt.profile)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
