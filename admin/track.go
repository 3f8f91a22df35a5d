package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/remoting"
)

// Track types of MessageTracks, RocketMQ's TrackType.
const (
	TrackConsumed            = "CONSUMED"
	TrackConsumedButFiltered = "CONSUMED_BUT_FILTERED"
	TrackPull                = "PULL"
	TrackNotConsumeYet       = "NOT_CONSUME_YET"
	TrackNotOnline           = "NOT_ONLINE"
	TrackUnknown             = "UNKNOWN"
)

// MessageTrack is whether one consumer group consumed a message (RocketMQ's MessageTrack).
type MessageTrack struct {
	ConsumerGroup string `json:"consumerGroup"`
	TrackType     string `json:"trackType"`
	// ExceptionDesc says why the track could not be told, RocketMQ's "CODE:206 DESC:..." for a
	// broker's answer; "" when it could.
	ExceptionDesc string `json:"exceptionDesc,omitempty"`
}

// String is RocketMQ's MessageTrack.toString.
func (t MessageTrack) String() string {
	desc := t.ExceptionDesc
	if desc == "" {
		desc = "null"
	}
	return "MessageTrack [consumerGroup=" + t.ConsumerGroup + ", trackType=" + t.TrackType + ", exceptionDesc=" + desc + "]"
}

// MessageTrackDetail tells, for every group that consumes the message's topic, whether it
// consumed the message, as RocketMQ's admin messageTrackDetail does (which mqadmin prints under
// a message): a push group online whose committed offset in the message's queue is past it
// CONSUMED (or CONSUMED_BUT_FILTERED when its subscription leaves the tag out), short of it
// NOT_CONSUME_YET; a pull group PULL (its progress is its own); a group with nobody online
// NOT_ONLINE.
func (a *Admin) MessageTrackDetail(ctx context.Context, m *consumer.Message) ([]MessageTrack, error) {
	groups, err := a.TopicConsumedBy(ctx, m.Topic)
	if err != nil {
		return nil, err
	}
	out := make([]MessageTrack, 0, len(groups))
	for _, g := range groups {
		t := MessageTrack{ConsumerGroup: g, TrackType: TrackUnknown}
		cc, err := a.ConsumerConnection(ctx, g)
		if err != nil {
			t.TrackType, t.ExceptionDesc = trackError(err)
			out = append(out, t)
			continue
		}
		switch cc.ConsumeType {
		case "CONSUME_ACTIVELY":
			t.TrackType = TrackPull
		case "CONSUME_PASSIVELY":
			consumed, err := a.consumed(ctx, m, g)
			switch {
			case err != nil:
				t.TrackType, t.ExceptionDesc = trackError(err)
			case !consumed:
				t.TrackType = TrackNotConsumeYet
			default:
				t.TrackType = TrackConsumed
				for _, s := range cc.Subscriptions {
					if s.Topic == m.Topic && !tagMatches(s.Expression, m.Tags) {
						t.TrackType = TrackConsumedButFiltered
					}
				}
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// trackError is the track type and description of a failed look-up: a group nobody consumes
// for online is NOT_ONLINE; a broker's refusal is described by its code.
func trackError(err error) (string, string) {
	var re *remoting.ResponseError
	if errors.As(err, &re) {
		typ := TrackUnknown
		if re.Code == remoting.ConsumerNotOnline {
			typ = TrackNotOnline
		}
		return typ, fmt.Sprintf("CODE:%d DESC:%s", re.Code, re.Remark)
	}
	return TrackUnknown, err.Error()
}

// consumed reports whether group's committed offset in m's queue is past m.
func (a *Admin) consumed(ctx context.Context, m *consumer.Message, group string) (bool, error) {
	st, err := a.ConsumeStats(ctx, group, m.Topic)
	if err != nil {
		return false, err
	}
	o, ok := st.Offsets[m.Queue]
	return ok && o.ConsumerOffset > m.QueueOffset, nil
}

// tagMatches reports whether a tag subscription takes tag: "*", "" or a list naming it.
func tagMatches(expression, tag string) bool {
	tags, err := tagSet(expression)
	return err == nil && (tags == nil || slices.Contains(tags, tag))
}
