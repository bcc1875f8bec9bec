// Package lease holds the timing rules that leader election (queue/leader)
// and sharding (queue/shard) share for the requests that write a Lease.
package lease

import "time"

// MinRequestTimeout is the shortest request timeout a Config may lead
// to: one shorter leaves a real API server no time to answer, so every
// request would be abandoned and the Lease never taken nor kept.
const MinRequestTimeout = 100 * time.Millisecond

// RequestTimeout is how long one request that reads or writes a Lease may
// take before it is abandoned, for a holder that must renew within
// renewDeadline and retries every retryPeriod: no longer than the part of
// leaseDuration past renewDeadline, and short enough that a renewal that
// hangs from the start of the renew deadline (one retry period after the
// last renewal) leaves time for another attempt within it. One slow or
// hung request thus never costs the holder its Lease.
func RequestTimeout(leaseDuration, renewDeadline, retryPeriod time.Duration) time.Duration {
	return min(leaseDuration-renewDeadline, (renewDeadline-retryPeriod)/2)
}
