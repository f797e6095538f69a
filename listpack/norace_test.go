//go:build !race

package listpack

const raceEnabled = false
