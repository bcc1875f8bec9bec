package multicluster

import "time"

// WithClientStopTimeout sets how long Run waits for client constructors
// and engage functions that still run once the clusters stopped, and for
// reconciles their controllers cancelled during a stop
// (clientStopTimeout by default).
func WithClientStopTimeout(d time.Duration) Option {
	return func(c *config) { c.clientWait = d }
}
