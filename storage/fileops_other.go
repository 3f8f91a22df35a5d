//go:build !linux

package storage

import "os"

func datasync(f *os.File) error { return f.Sync() }

func preallocate(f *os.File, size int64) error { return f.Truncate(size) }

func zeroRange(f *os.File, data []byte, off, n int64) error {
	zeroBytes(data, off, n)
	return nil
}

func diskUsedRatio(dir string) (float64, error) { return 0, nil }

func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(dir+"/lock", os.O_RDWR|os.O_CREATE, 0o644)
}

func physicalMemory() int64 { return 0 }
