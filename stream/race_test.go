//go:build race

package stream

// raceEnabled reports a -race build: the slowest model tests run fewer
// rounds under it, and timing checks are skipped.
const raceEnabled = true
