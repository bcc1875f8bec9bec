package optional

import "time"

// SetDiscoveryPeriod sets a's discovery period below MinDiscoveryPeriod,
// for tests that must not wait for minutes.
func SetDiscoveryPeriod(a *APIs, d time.Duration) { a.cfg.period = d }
