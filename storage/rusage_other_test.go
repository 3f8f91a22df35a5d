//go:build !linux

package storage

type faults struct{ min, maj, cpu int64 }

func threadFaults() (faults, bool) { return faults{}, false }
