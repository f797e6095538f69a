//go:build race

package listpack

// raceEnabled reports a -race build: the slowest model tests run fewer
// steps under it, and allocation counts are not checked (sync.Pool drops
// items at random under the race detector).
const raceEnabled = true
