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

// MinMemoryLimit is the smallest --memory-limit other than 0: 1Mi. Below
// it the collector would run all the time; a smaller value is a mistaken
// unit (512m is 0.512 bytes, 512k is 512000 bytes), which Validate
// refuses instead of running with it.
const MinMemoryLimit = 1 << 20

// cgroupMemoryFiles are where a container's memory limit is found: cgroup
// v2, then v1. A variable so that tests can point it elsewhere.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// noCgroupLimit is above any real limit: cgroup v1 reports no limit as a
// number near the largest int64, rounded down to the page size.
const noCgroupLimit = 1 << 60

// memoryLimit returns the soft memory limit the Go runtime is to keep the
// heap under, in bytes, and where it came from; 0 means none is to be
// set. flag is --memory-limit: a quantity such as 512Mi, at least
// MinMemoryLimit, "0" for no limit, or empty for the default: $GOMEMLIMIT
// if set (the runtime read it already), else MemoryLimitShare of the
// cgroup's limit.
func memoryLimit(flag, env string) (int64, string, error) {
	switch {
	case flag != "":
		limit, err := parseMemoryLimit(flag)
		if err != nil {
			return 0, "", err
		}
		return limit, "--memory-limit", nil
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

// parseMemoryLimit returns the bytes of --memory-limit: 0, or a whole
// number of bytes from MinMemoryLimit to the largest int64.
func parseMemoryLimit(flag string) (int64, error) {
	q, err := resource.ParseQuantity(flag)
	if err != nil || q.Sign() < 0 {
		return 0, fmt.Errorf("--memory-limit %q is not a quantity of bytes such as 512Mi, or 0", flag)
	}
	if q.Cmp(*resource.NewQuantity(math.MaxInt64, resource.BinarySI)) > 0 {
		return 0, fmt.Errorf("--memory-limit %q is more than %d bytes, the largest limit", flag, int64(math.MaxInt64))
	}
	limit := q.Value() // rounded up to a whole byte
	if q.Cmp(*resource.NewQuantity(limit, resource.BinarySI)) != 0 {
		if number, ok := strings.CutSuffix(flag, "m"); ok {
			return 0, fmt.Errorf("--memory-limit %q is %s bytes, a fraction of a byte (m means thousandths); for %s mebibytes write %sMi", flag, q.AsDec(), number, number)
		}
		return 0, fmt.Errorf("--memory-limit %q is %s bytes, a fraction of a byte; write whole bytes, such as 512Mi", flag, q.AsDec())
	}
	if limit != 0 && limit < MinMemoryLimit {
		return 0, fmt.Errorf("--memory-limit %q is %d bytes, below the minimum of 1Mi (%d bytes); write a limit such as 512Mi, or 0 for none", flag, limit, MinMemoryLimit)
	}
	return limit, nil
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
