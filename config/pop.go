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
}
