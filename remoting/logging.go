package remoting

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// gnetLogger routes gnet's own messages into zerolog. Once quiet is set (the server shut its
// listener to stop), gnet's errors are the expected failed accept and the engine stopping on
// it, logged at debug level.
type gnetLogger struct {
	log   zerolog.Logger
	quiet *atomic.Bool
}

func (g gnetLogger) Debugf(f string, a ...any) { g.log.Debug().Msg(fmt.Sprintf(f, a...)) }
func (g gnetLogger) Infof(f string, a ...any)  { g.log.Debug().Msg(fmt.Sprintf(f, a...)) }
func (g gnetLogger) Warnf(f string, a ...any)  { g.log.Warn().Msg(fmt.Sprintf(f, a...)) }
func (g gnetLogger) Errorf(f string, a ...any) { g.errorf(f, a...) }
func (g gnetLogger) Fatalf(f string, a ...any) { g.errorf(f, a...) }

func (g gnetLogger) errorf(f string, a ...any) {
	if g.quiet != nil && g.quiet.Load() {
		g.log.Debug().Msg(fmt.Sprintf(f, a...))
		return
	}
	g.log.Error().Msg(fmt.Sprintf(f, a...))
}

// rateLimiter lets one event through per interval and counts the rest, so a flood of bad frames
// costs one log line a second.
type rateLimiter struct {
	interval   time.Duration
	last       atomic.Int64
	suppressed atomic.Int64
}

// allow reports whether to log now, and how many events were suppressed since the last one.
func (r *rateLimiter) allow() (bool, int64) {
	now := time.Now().UnixNano()
	last := r.last.Load()
	if now-last < int64(r.interval) || !r.last.CompareAndSwap(last, now) {
		r.suppressed.Add(1)
		return false, 0
	}
	return true, r.suppressed.Swap(0)
}
