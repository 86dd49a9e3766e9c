package track

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time of the calling OS thread (lock it first), 0 if unavailable.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
