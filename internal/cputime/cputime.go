// Package cputime reads the process's CPU time, for the benchmarks that
// report CPU per operation (BenchmarkCycleCPU, BenchmarkCompactAppend).
package cputime

import "time"

// Process is the CPU time the process has used so far, every goroutine and
// thread (a history writer's drain too), user and system; 0 where the
// platform does not say.
func Process() time.Duration { return process() }
