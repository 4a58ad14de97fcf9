//go:build race

package db

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true
