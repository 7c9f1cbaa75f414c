//go:build unix

package campaign

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used so far, every goroutine
// and thread, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
