//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package persistence

import "os"

// lockFile does nothing where flock is missing: the lock file still
// names the owner, but a second process is not stopped.
func lockFile(*os.File) error { return nil }
