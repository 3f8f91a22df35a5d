//go:build !linux

package storage

import (
	"errors"
	"os"
)

func datasync(f *os.File) error { return f.Sync() }

func preallocate(f *os.File, off, n int64) error { return extendTo(f, off+n) }

func populateRead([]byte) error { return nil }

func zeroRange(f *os.File, data []byte, off, n int64) error {
	zeroBytes(data, off, n)
	return nil
}

func diskUsedRatio(dir string) (float64, error) { return 0, nil }

func diskSpace(dir string) (DiskSpace, error) {
	return DiskSpace{}, errors.New("storage: disk space is not known on this platform")
}

func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(dir+"/lock", os.O_RDWR|os.O_CREATE, 0o644)
}

func physicalMemory() int64 { return 0 }
