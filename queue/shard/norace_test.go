package shard

// raceEnabled is true in tests built with the race detector, which makes
// the simulation explore fewer schedules in the same time.
var raceEnabled bool
