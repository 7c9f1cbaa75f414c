package driver

import "syscall"

// sysProcAttr puts a driver in a process group of its own (the client
// faults signal the group) and has the kernel kill it when lockchaos dies,
// even by SIGKILL (Pdeathsig).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
