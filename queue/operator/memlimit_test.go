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
		{name: "flag 0m is 0 too", flag: "0m", wantSource: "--memory-limit"},
		{name: "flag at the minimum", flag: "1Mi", wantLimit: 1 << 20, wantSource: "--memory-limit"},
		{name: "flag of whole bytes in a fraction of a unit", flag: "0.5Gi", wantLimit: 512 << 20, wantSource: "--memory-limit"},
		{name: "flag in thousandths of a byte", flag: "512m", wantErrText: `--memory-limit "512m" is 0.512 bytes, a fraction of a byte (m means thousandths); for 512 mebibytes write 512Mi`},
		{name: "flag with a fraction of a byte", flag: "1048576.5", wantErrText: `--memory-limit "1048576.5" is 1048576.5 bytes, a fraction of a byte; write whole bytes, such as 512Mi`},
		{name: "flag below the minimum", flag: "1023Ki", wantErrText: `--memory-limit "1023Ki" is 1047552 bytes, below the minimum of 1Mi (1048576 bytes); write a limit such as 512Mi, or 0 for none`},
		{name: "flag of one byte", flag: "1", wantErrText: "below the minimum of 1Mi"},
		{name: "flag above the largest limit", flag: "9223372036854775808", wantErrText: `--memory-limit "9223372036854775808" is more than 9223372036854775807 bytes, the largest limit`},
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

// The help of --memory-limit states the minimum and warns of the unit m.
func TestMemoryLimitHelp(t *testing.T) {
	fs := flag.NewFlagSet("op", flag.ContinueOnError)
	var f Flags
	f.Bind(fs)
	fl := fs.Lookup("memory-limit")
	require.NotNil(t, fl)
	assert.Contains(t, fl.Usage, "at least 1Mi")
	assert.Contains(t, fl.Usage, "512m would be 0.512 bytes")
}
