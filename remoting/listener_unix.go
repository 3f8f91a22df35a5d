//go:build unix

package remoting

import "syscall"

// shutdownListener stops the listening socket fd refers to (a duplicate of gnet's): on Linux
// the connections waiting to be accepted are reset, new ones are refused, and accept fails.
func shutdownListener(fd int) error { return syscall.Shutdown(fd, syscall.SHUT_RD) }

func closeFD(fd int) { _ = syscall.Close(fd) }
