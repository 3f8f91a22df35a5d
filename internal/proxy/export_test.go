package proxy

import "time"

// SetReceiveWriteTimeout shortens how long a receive waits for a client that reads nothing,
// for tests; the returned func restores it.
func SetReceiveWriteTimeout(d time.Duration) (restore func()) {
	old := receiveWriteTimeout.Swap(int64(d))
	return func() { receiveWriteTimeout.Store(old) }
}
