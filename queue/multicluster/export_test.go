package multicluster

import "time"

// WithClientStopTimeout sets how long Run waits for client constructors
// and engage functions that still run once the clusters stopped, and for
// reconciles their controllers cancelled during a stop
// (clientStopTimeout by default).
func WithClientStopTimeout(d time.Duration) Option {
	return func(c *config) { c.clientWait = d }
}

// SetReportWait sets how long after the Fleet's first sync
// Results.Reported waits for the members ready then, for a Results made
// afterwards, until the test ends.
func SetReportWait(t interface{ Cleanup(func()) }, d time.Duration) {
	old := reportWait
	reportWait = d
	t.Cleanup(func() { reportWait = old })
}
