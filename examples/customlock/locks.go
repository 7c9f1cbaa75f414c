package main

// The example's renewing and reentrant locks, registered in their init, so
// that `customlock list locks` shows them and `customlock run --lock` runs
// them as it does seq-lock.
import (
	_ "example.com/customlock/reentrantlock"
	_ "example.com/customlock/renewlock"
)
