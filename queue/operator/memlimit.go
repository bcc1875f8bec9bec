package operator

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MemoryLimitShare is the share of the container's memory limit that
// --memory-limit defaults to: the rest is left for what the Go runtime does
// not count (stacks of threads outside Go, the binary's pages) and for the
// collector to catch up before the kernel's out-of-memory killer would.
const MemoryLimitShare = 0.9

// cgroupMemoryFiles are where a container's memory limit is found: cgroup
// v2, then v1. A variable so that tests can point it elsewhere.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// noCgroupLimit is above any real limit: cgroup v1 reports no limit as a
// number near the largest int64, rounded down to the page size.
const noCgroupLimit = 1 << 60

// memoryLimit returns the soft memory limit the Go runtime is to keep the
// heap under, in bytes, and where it came from; 0 means none is to be
// set. flag is --memory-limit: a quantity such as 512Mi, "0" for no
// limit, or empty for the default: $GOMEMLIMIT if set (the runtime read
// it already), else MemoryLimitShare of the cgroup's limit.
func memoryLimit(flag, env string) (int64, string, error) {
	switch {
	case flag != "":
		q, err := resource.ParseQuantity(flag)
		if err != nil || q.Sign() < 0 {
			return 0, "", fmt.Errorf("--memory-limit %q is not a quantity of bytes such as 512Mi, or 0", flag)
		}
		return q.Value(), "--memory-limit", nil
	case env != "":
		return 0, "$GOMEMLIMIT", nil
	}
	for _, path := range cgroupMemoryFiles {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(data))
		if s == "max" {
			return 0, path, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= noCgroupLimit {
			return 0, path, nil
		}
		return int64(float64(n) * MemoryLimitShare), path, nil
	}
	return 0, "", nil
}

// setMemoryLimit sets the Go runtime's soft memory limit as memoryLimit
// decides, and says what it did.
func setMemoryLimit(flag string) (string, error) {
	limit, source, err := memoryLimit(flag, os.Getenv("GOMEMLIMIT"))
	switch {
	case err != nil:
		return "", err
	case source == "$GOMEMLIMIT":
		return fmt.Sprintf("Go memory limit %d bytes, from $GOMEMLIMIT", debug.SetMemoryLimit(-1)), nil
	case limit > 0:
		debug.SetMemoryLimit(limit)
		return fmt.Sprintf("Go memory limit %d bytes, from %s", limit, source), nil
	case source == "--memory-limit":
		debug.SetMemoryLimit(math.MaxInt64)
		return "no Go memory limit (--memory-limit 0)", nil
	}
	return "no Go memory limit: no container memory limit found", nil
}
