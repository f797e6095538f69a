//go:build !linux

package cli

// backgroundThread does nothing where thread priorities are not set.
func backgroundThread() {}
