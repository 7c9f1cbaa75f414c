//go:build !linux

package driver

import "syscall"

// sysProcAttr puts a driver in a process group of its own. Outside Linux
// there is no Pdeathsig: a lockchaos killed by SIGKILL leaves its drivers,
// which exit when their stdin closes.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
