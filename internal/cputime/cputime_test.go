package cputime

import (
	"runtime"
	"testing"
	"time"
)

// The process's CPU time grows while it computes (where it is measured).
func TestProcessGrows(t *testing.T) {
	a := Process()
	if a == 0 && runtime.GOOS == "windows" {
		t.Skip("not measured here")
	}
	x := 0
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); x++ {
	}
	if b := Process(); b <= a {
		t.Errorf("CPU time %v then %v after 50 ms of work (%d loops): want it to grow", a, b, x)
	}
}
