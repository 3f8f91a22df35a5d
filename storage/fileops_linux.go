package storage

import (
	"os"
	"syscall"
	"unsafe"
)

func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// preallocate reserves the blocks of [off, off+n) of f so that a full disk is reported here,
// when a segment is created or its writer reserves ahead of itself, rather than as SIGBUS on a
// write through the mapping. Where the file system cannot reserve, the file is only extended.
func preallocate(f *os.File, off, n int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, off, n)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EOPNOTSUPP || err == syscall.ENOSYS {
			return extendTo(f, off+n)
		}
		return err
	}
}

// populateRead maps data's pages readable (MADV_POPULATE_READ, Linux 5.14): the kernel
// allocates and zeroes the page-cache pages of an unwritten (fallocated) range now, so the
// writer's first store into each is a write-protect fault on a page already there rather than
// an allocation and a zeroing. The pages stay clean: nothing is written to disk for them, unlike
// populating for write, which the next fdatasync of the segment would write out whole. An
// older kernel (EINVAL) is left as it was.
func populateRead(data []byte) error {
	const madvPopulateRead = 22
	if len(data) == 0 {
		return nil
	}
	for {
		_, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), madvPopulateRead)
		switch e {
		case 0, syscall.EINVAL:
			return nil
		case syscall.EINTR, syscall.EAGAIN:
			continue
		default:
			return e
		}
	}
}

// zeroRange punches a hole over whole pages of the range (freeing the blocks and zeroing the
// mapped pages) and clears the partial pages at its ends through the mapping.
func zeroRange(f *os.File, data []byte, off, n int64) error {
	const fallocPunchHole, fallocKeepSize = 0x02, 0x01
	pg := int64(os.Getpagesize())
	start := (off + pg - 1) / pg * pg
	end := (off + n) / pg * pg
	if end-start >= 16*pg {
		err := syscall.Fallocate(int(f.Fd()), fallocPunchHole|fallocKeepSize, start, end-start)
		if err == nil {
			// Reserve the blocks again so later writes cannot meet a full disk.
			_ = syscall.Fallocate(int(f.Fd()), 0, start, end-start)
			zeroBytes(data, off, start-off)
			zeroBytes(data, end, off+n-end)
			return nil
		}
	}
	zeroBytes(data, off, n)
	return nil
}

func diskSpace(dir string) (DiskSpace, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return DiskSpace{}, err
	}
	bs := uint64(st.Bsize)
	return DiskSpace{Total: st.Blocks * bs, Free: st.Bavail * bs, used: (st.Blocks - st.Bfree) * bs}, nil
}

// diskUsedRatio is RocketMQ's getDiskPartitionSpaceUsedPercent (DiskSpace.UsedRatio).
func diskUsedRatio(dir string) (float64, error) {
	d, err := diskSpace(dir)
	return d.UsedRatio(), err
}

// lockDir takes an exclusive advisory lock on dir/lock so two stores never share a directory.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir+"/lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// physicalMemory returns the machine's RAM in bytes (0 if unknown).
func physicalMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
