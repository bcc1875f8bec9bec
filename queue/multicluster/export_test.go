package multicluster

import "time"

// WithClientStopTimeout sets how long Run waits for client constructors
// that still run once the clusters stopped (clientStopTimeout by default).
func WithClientStopTimeout(d time.Duration) Option {
	return func(c *config) { c.clientWait = d }
}
