//go:build race

package multicluster_test

// raceEnabled is true when the tests run under the race detector.
const raceEnabled = true
