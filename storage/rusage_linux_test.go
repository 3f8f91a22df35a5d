package storage

import "syscall"

// faults are a thread's page faults and its CPU time (user + system, ns).
type faults struct{ min, maj, cpu int64 }

// threadFaults returns the page faults the calling OS thread has taken and its CPU time.
func threadFaults() (faults, bool) {
	const rusageThread = 1
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return faults{}, false
	}
	return faults{min: ru.Minflt, maj: ru.Majflt, cpu: ru.Utime.Nano() + ru.Stime.Nano()}, true
}
