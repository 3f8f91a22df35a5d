package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd if the test binary dies without its cleanups (a
// panic, a -timeout), so no mqnode outlives the test.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
