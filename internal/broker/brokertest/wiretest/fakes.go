package wiretest

import (
	"context"
	"sync"
	"time"

	"github.com/mqgo/mq/remoting"
)

// FakeChannel is a remoting.Channel that sends nothing; only its identity and whether it is
// closed matter to the tests that use it.
type FakeChannel struct {
	Num  uint64
	Shut bool
}

func (c *FakeChannel) ID() uint64                            { return c.Num }
func (c *FakeChannel) RemoteAddr() string                    { return "10.0.0.9:1" }
func (c *FakeChannel) LocalAddr() string                     { return "10.0.0.1:10911" }
func (c *FakeChannel) WriteResponse(*remoting.Command) error { return nil }
func (c *FakeChannel) InvokeSync(context.Context, *remoting.Command) (*remoting.Command, error) {
	return nil, remoting.ErrClosed
}
func (c *FakeChannel) InvokeAsync(context.Context, *remoting.Command, func(*remoting.Command, error)) error {
	return remoting.ErrClosed
}
func (c *FakeChannel) InvokeOneway(*remoting.Command) error { return nil }
func (c *FakeChannel) Close() error                         { c.Shut = true; return nil }
func (c *FakeChannel) Closed() bool                         { return c.Shut }

// FakeClock is a clock tests move by hand, safe for concurrent use.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock starts at a fixed instant, so that runs compare.
func NewFakeClock() *FakeClock { return &FakeClock{now: time.Unix(1700000000, 0)} }

func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
