package consumer

import (
	"errors"
	"fmt"
	"time"
)

// Defaults and bounds of the simple consumer (simple_consumer.go).
const (
	// DefaultAwaitDuration is how long a Receive lets a broker hold the POP when it has nothing
	// to hand out (5.x's SimpleConsumerBuilder awaitDuration, which 5.x's Java SDK wants set and
	// its examples set to 30 s; its Go SDK leaves it 0, no long polling).
	DefaultAwaitDuration = 30 * time.Second
	// DefaultSimpleRequestTimeout bounds Ack and ChangeInvisibleDuration, and is added to the
	// await duration for a Receive (5.x's ClientConfiguration requestTimeout, 3 s).
	DefaultSimpleRequestTimeout = 3 * time.Second
	// MaxReceiveMessageNum is the most messages one Receive asks for: RocketMQ 5's broker refuses
	// a POP of more than 32, and its proxy lowers a larger batch size to that
	// (ProxyUtils.MAX_MSG_NUMS_FOR_POP_REQUEST). Receive lowers a larger maxMessageNum too.
	MaxReceiveMessageNum = 32
	// MaxAwaitDuration bounds WithAwaitDuration: a long poll held longer is more likely cut by
	// something between client and broker than answered (ours; 5.x's proxy holds a gRPC
	// receive at most 20 s, grpcClientConsumerMaxLongPollingTimeoutMillis).
	MaxAwaitDuration = 5 * time.Minute
)

// simpleConfig is what only the simple consumer uses.
type simpleConfig struct {
	awaitDuration  time.Duration
	requestTimeout time.Duration
}

func defaultSimpleConfig() simpleConfig {
	return simpleConfig{awaitDuration: DefaultAwaitDuration, requestTimeout: DefaultSimpleRequestTimeout}
}

// WithAwaitDuration sets how long a SimpleConsumer's Receive lets a broker hold the request
// while it has no message to hand out (long polling; 5.x's awaitDuration, default
// DefaultAwaitDuration, 30 s). 0 asks the broker to answer at once; at most MaxAwaitDuration.
// Simple consumer only.
func WithAwaitDuration(d time.Duration) Option {
	return optionFunc(func(c *config) { c.awaitDuration = d })
}

// WithRequestTimeout sets how long a SimpleConsumer waits for the answer to an Ack or a
// ChangeInvisibleDuration, and for a Receive's beyond its await duration (5.x's
// requestTimeout, default DefaultSimpleRequestTimeout, 3 s). A context deadline that comes
// sooner wins. Simple consumer only.
func WithRequestTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.requestTimeout = d })
}

// check refuses settings the simple consumer cannot work with. The push consumer's options it
// ignores (pull sizes, listeners, rebalancing) are not checked beyond newConfig's.
func (c *config) checkSimple() error {
	var errs []error
	if c.awaitDuration < 0 || c.awaitDuration > MaxAwaitDuration {
		errs = append(errs, fmt.Errorf("consumer: await duration out of range [0, %v], got %v", MaxAwaitDuration, c.awaitDuration))
	}
	if c.requestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("consumer: request timeout must be positive, got %v", c.requestTimeout))
	}
	if c.model != Clustering {
		errs = append(errs, errors.New("consumer: a simple consumer consumes in clustering mode only (POP shares a group's messages)"))
	}
	if c.from == FromTimestamp {
		errs = append(errs, errors.New("consumer: a simple consumer starts from the first or the last offset (POP's init modes), not a timestamp"))
	}
	return errors.Join(errs...)
}
