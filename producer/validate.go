package producer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
)

// MaxTopicLength is the longest topic name (RocketMQ 4.x, one-byte length in the record).
const MaxTopicLength = names.MaxTopicBytes

// ValidateTopic checks a topic name: non-empty, characters from [%|a-zA-Z0-9_-], at most 127
// bytes, and not a reserved system topic. The error wraps ErrInvalidMessage and names the rule.
func ValidateTopic(topic string) error {
	if err := names.CheckTopic(topic); err != nil {
		return invalid("topic %s", nameProblem(err))
	}
	if names.Reserved(topic) {
		return invalid("topic %s is a reserved system topic", topic)
	}
	return nil
}

// validate checks msg before any I/O.
func (p *Producer) validate(msg *Message) error {
	if msg == nil {
		return invalid("message is nil")
	}
	if err := ValidateTopic(msg.Topic); err != nil {
		return err
	}
	if len(msg.Body) == 0 {
		return invalid("body of the message to %s is empty", msg.Topic)
	}
	if len(msg.Body) > p.cfg.maxMessageSize {
		return invalid("body of %d bytes exceeds the max message size %d", len(msg.Body), p.cfg.maxMessageSize)
	}
	if msg.DelayTimeLevel < 0 {
		return invalid("delay time level %d is negative", msg.DelayTimeLevel)
	}
	if msg.MessageGroup != "" {
		if err := checkMessageGroup(msg); err != nil {
			return err
		}
	}
	n := 0
	for k, v := range msg.Properties {
		if k == "" {
			return invalid("property with an empty name")
		}
		if strings.ContainsAny(k, "\x01\x02") || strings.ContainsAny(v, "\x01\x02") {
			return invalid("property %q contains a separator byte 0x01 or 0x02", k)
		}
		n += len(k) + len(v) + 2
	}
	if strings.ContainsAny(msg.Tags, "\x01\x02") {
		return invalid("tags contain a separator byte 0x01 or 0x02")
	}
	for _, k := range msg.Keys {
		if strings.ContainsAny(k, "\x01\x02") {
			return invalid("key %q contains a separator byte 0x01 or 0x02", k)
		}
		n += len(k) + 1
	}
	n += len(msg.Tags) + len(msg.MessageGroup) + 64
	if n > message.MaxPropertiesBytes {
		return invalid("properties of about %d bytes exceed %d", n, message.MaxPropertiesBytes)
	}
	return nil
}

// checkMessageGroup checks a message's group as 5.x's clients and proxy do: short, printable
// as a property, and not on a message the broker would hold back (a FIFO message is delivered
// in its order, never later; 5.x's MessageBuilder refuses a group with a delivery time).
func checkMessageGroup(msg *Message) error {
	g := msg.MessageGroup
	if len(g) > MaxMessageGroupLength {
		return invalid("message group of %d bytes exceeds %d", len(g), MaxMessageGroupLength)
	}
	if strings.ContainsAny(g, "\x01\x02") {
		return invalid("message group contains a separator byte 0x01 or 0x02")
	}
	if msg.DelayTimeLevel > 0 || msg.Properties[message.PropertyDelayTimeLevel] != "" ||
		msg.Properties[message.PropertyTimerDeliverMS] != "" || msg.Properties[propertyTimerDelayMS] != "" {
		return invalid("message group %q with a delay or a delivery time: a FIFO message cannot be delayed", g)
	}
	return nil
}

// nameProblem says what is wrong with a name internal/names refused, in the producer's words
// (the same rules as the broker's).
func nameProblem(err error) string {
	var e *names.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	switch e.Rule {
	case names.Empty:
		return "is empty"
	case names.TooLong:
		return fmt.Sprintf("length %d exceeds %d", e.Len, e.Max)
	case names.IllegalChar:
		return fmt.Sprintf("%s contains %q at byte %d, outside %s", e.Quoted(), e.Byte, e.At, names.Pattern)
	}
	return err.Error()
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidMessage}, args...)...)
}

// validateBatch checks every message of a batch and what a batch adds: one topic, no delay,
// and an estimated encoded size within the max message size.
func (p *Producer) validateBatch(msgs []*Message) error {
	if len(msgs) == 0 {
		return invalid("empty batch")
	}
	size := 0
	for _, m := range msgs {
		if err := p.validate(m); err != nil {
			return err
		}
		if m.Topic != msgs[0].Topic {
			return invalid("batch mixes topics %s and %s", msgs[0].Topic, m.Topic)
		}
		if m.DelayTimeLevel > 0 {
			return invalid("a batch cannot hold delayed messages")
		}
		if m.MessageGroup != msgs[0].MessageGroup {
			return invalid("batch mixes message groups %q and %q: a batch goes to one queue", msgs[0].MessageGroup, m.MessageGroup)
		}
		size += 22 + len(m.Body) + 64
	}
	if size > p.cfg.maxMessageSize {
		return invalid("batch of about %d bytes exceeds the max message size %d", size, p.cfg.maxMessageSize)
	}
	return nil
}
