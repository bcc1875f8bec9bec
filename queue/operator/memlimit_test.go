package operator

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemoryLimit(t *testing.T) {
	cgroup := func(content string) string {
		path := filepath.Join(t.TempDir(), "memory.max")
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		return path
	}
	tests := []struct {
		name        string
		flag, env   string
		files       []string
		wantLimit   int64
		wantSource  string
		wantErrText string
	}{
		{name: "flag", flag: "512Mi", env: "1GiB", files: []string{cgroup("1073741824\n")}, wantLimit: 512 << 20, wantSource: "--memory-limit"},
		{name: "flag 0 turns it off", flag: "0", files: []string{cgroup("1073741824\n")}, wantSource: "--memory-limit"},
		{name: "$GOMEMLIMIT next", env: "300MiB", files: []string{cgroup("1073741824\n")}, wantSource: "$GOMEMLIMIT"},
		{name: "then 90% of the cgroup v2 limit", files: []string{cgroup("1000000000\n")}, wantLimit: 900_000_000, wantSource: "memory.max"},
		{name: "no cgroup v2 limit", files: []string{cgroup("max\n")}, wantSource: "memory.max"},
		{name: "cgroup v1 without a limit", files: []string{"/nonexistent", cgroup("9223372036854771712\n")}, wantSource: "memory.max"},
		{name: "cgroup v1 limit", files: []string{"/nonexistent", cgroup("2000000000")}, wantLimit: 1_800_000_000, wantSource: "memory.max"},
		{name: "no cgroup", files: []string{"/nonexistent"}},
		{name: "bad flag", flag: "1.5 GB", wantErrText: `--memory-limit "1.5 GB" is not a quantity`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			was := cgroupMemoryFiles
			t.Cleanup(func() { cgroupMemoryFiles = was })
			cgroupMemoryFiles = tt.files
			limit, source, err := memoryLimit(tt.flag, tt.env)
			if tt.wantErrText != "" {
				require.ErrorContains(t, err, tt.wantErrText)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantLimit, limit)
			if tt.wantSource == "memory.max" {
				assert.Equal(t, "memory.max", filepath.Base(source))
			} else {
				assert.Equal(t, tt.wantSource, source)
			}
		})
	}
}

// Main sets the limit the flags decide before it runs the operator.
func TestMainSetsTheMemoryLimit(t *testing.T) {
	was := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(was) })
	t.Setenv("GOMEMLIMIT", "")
	var seen int64
	fs := flag.NewFlagSet("op", flag.ContinueOnError)
	var f Flags
	f.Bind(fs)
	code := f.Main(fs, []string{"--memory-limit=300Mi"}, io.Discard, func(context.Context) error {
		seen = debug.SetMemoryLimit(-1)
		return nil
	}, nil)
	require.Equal(t, 0, code)
	assert.Equal(t, int64(300<<20), seen)
}
