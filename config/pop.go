package config

import "time"

// RocketMQ 5's POP defaults (BrokerConfig).
const (
	DefaultPopReviveInterval             = time.Second // reviveInterval (ms 1000)
	DefaultPopFromRetryProbability       = 20          // popFromRetryProbability (percent)
	DefaultPopMaxPollingSize             = 100000      // maxPopPollingSize
	DefaultPopPollingSize                = 1024        // popPollingSize (per topic)
	DefaultPopCkMaxBufferSize            = 200000      // popCkMaxBufferSize
	DefaultPopMaxInvisibleTime           = 12 * time.Hour
	DefaultPopReviveQueueNum       int32 = 8 // reviveQueueNum
)

// DefaultPopCkStayBufferTime is how long acks merged in memory wait to be written (RocketMQ 5's
// popCkStayBufferTime is 10 s, for whole checkpoints): the store's default async flush interval,
// so that a kill -9 under ASYNC_FLUSH loses only acks of the last flush interval.
const DefaultPopCkStayBufferTime = 500 * time.Millisecond

// Pop is RocketMQ 5's POP consumption: the checkpoints that hide popped messages, the revive
// loop that brings unacknowledged ones back, and the parked pops (internal/broker/pop).
type Pop struct {
	// ReviveInterval is how often each revive queue looks for checkpoints whose invisible time
	// passed (default 1 s).
	ReviveInterval time.Duration `flag:"pop-revive-interval" rocketmq:"reviveInterval" usage:"how often the broker brings back popped messages whose invisible time passed"`
	// FromRetryProbability is the percent of pops that read the group's retry topic first
	// (default 20).
	FromRetryProbability int `flag:"pop-from-retry-probability" rocketmq:"popFromRetryProbability" usage:"percent of pops that read the retry topic first"`
	// MaxPollingSize caps the pops and notifications parked at once (default 100000); past it
	// they are answered POLLING_FULL.
	MaxPollingSize int `flag:"pop-max-polling-size" rocketmq:"maxPopPollingSize" usage:"pops parked at once, all topics"`
	// PollingSize caps the pops parked on one topic (default 1024).
	PollingSize int `flag:"pop-polling-size" rocketmq:"popPollingSize" usage:"pops parked at once on one topic"`
	// CkMaxBufferSize caps the checkpoints (pops not yet acknowledged nor revived) held at once
	// (default 200000); past it pops are refused with SYSTEM_BUSY until acks or revives free
	// room.
	CkMaxBufferSize int `flag:"pop-ck-max-buffer-size" rocketmq:"popCkMaxBufferSize" usage:"popped batches awaiting ack or revive held at once"`
	// MaxInvisibleTime bounds a pop's and a change's invisible time (default 12 h, the
	// proxy's maxInvisibleTimeMills); larger is refused with INVALID_PARAMETER.
	MaxInvisibleTime time.Duration `flag:"pop-max-invisible-time" rocketmq:"maxInvisibleTimeMills" usage:"longest invisible time a pop may ask"`
	// DisableBufferMerge writes every ack to the revive topic before it is answered. By
	// default (unlike RocketMQ 5, whose enablePopBufferMerge is off) a master under
	// ASYNC_FLUSH and ASYNC_MASTER merges acks in memory against their checkpoints and writes
	// each checkpoint's acks as one record at most CkStayBufferTime later: an ack then costs
	// no append, and a kill -9 loses only acks of the last CkStayBufferTime, which come back
	// after their invisible time (SYNC_FLUSH and SYNC_MASTER always write acks through).
	DisableBufferMerge bool `flag:"no-pop-buffer-merge" rocketmq:"enablePopBufferMerge=false" usage:"write each POP ack before answering it instead of merging acks in memory (ASYNC_FLUSH masters)"`
	// CkStayBufferTime is how long merged acks stay in memory before they are written
	// (default 500 ms, the store's default async flush interval; RocketMQ 5's 10 s is how long
	// it keeps whole checkpoints). Longer than the store's flushIntervalCommitLog, a kill -9 may
	// lose acks older than a flush interval.
	CkStayBufferTime time.Duration `flag:"pop-ck-stay-buffer-time" rocketmq:"popCkStayBufferTime" usage:"how long merged POP acks stay in memory before they are written"`
}

// EnsureDefaults writes POP's defaults, in place of negative values too.
func (p *Pop) EnsureDefaults() {
	setPositive(&p.ReviveInterval, DefaultPopReviveInterval)
	if p.FromRetryProbability <= 0 || p.FromRetryProbability > 100 {
		p.FromRetryProbability = DefaultPopFromRetryProbability
	}
	setPositive(&p.MaxPollingSize, DefaultPopMaxPollingSize)
	setPositive(&p.PollingSize, DefaultPopPollingSize)
	setPositive(&p.CkMaxBufferSize, DefaultPopCkMaxBufferSize)
	setPositive(&p.MaxInvisibleTime, DefaultPopMaxInvisibleTime)
	setPositive(&p.CkStayBufferTime, DefaultPopCkStayBufferTime)
}
