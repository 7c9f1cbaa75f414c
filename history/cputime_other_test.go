//go:build !unix

package history

import "time"

// processCPU is not measured here: the cpu-ns/event metric reads 0.
func processCPU() time.Duration { return 0 }
