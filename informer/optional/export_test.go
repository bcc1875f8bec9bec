package optional

import "time"

// SetDiscoveryPeriod sets a's discovery period below MinDiscoveryPeriod,
// for tests that must not wait for minutes.
func SetDiscoveryPeriod(a *APIs, d time.Duration) { a.cfg.period = d }

// SetDiscoveryRetry sets how soon a's discovery asks again after a failed
// request, for tests that must not wait for seconds.
func SetDiscoveryRetry(a *APIs, d time.Duration) { a.cfg.retry = d }
