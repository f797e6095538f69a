package cli

import (
	"runtime"
	"syscall"
)

// backgroundThread moves the calling goroutine onto an OS thread of its
// own at a lower scheduling priority (nice 10), for the rest of its life:
// a background save or rewrite then takes the CPU only when the threads
// serving clients do not want it, as a forked child of Redis competes
// with Redis, instead of making their replies wait for the kernel's next
// tick (4 ms here). The thread ends with the goroutine (it is never
// unlocked), so the priority goes nowhere else.
func backgroundThread() {
	runtime.LockOSThread()
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 10)
}
