//go:build !linux

package persistence

// syncData makes f's written data durable.
func syncData(f File) error { return f.Sync() }
