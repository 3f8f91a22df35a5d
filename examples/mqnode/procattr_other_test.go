//go:build !linux

package main

import "os/exec"

// dieWithParent needs Linux's parent-death signal; elsewhere only the test's cleanups stop
// the processes.
func dieWithParent(*exec.Cmd) {}
