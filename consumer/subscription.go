package consumer

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
)

// subscription is one subscribed topic: its tag expression, the listener, and the parsed tag
// set the client filters on.
type subscription struct {
	topic    string
	expr     string
	tags     map[string]struct{} // nil for "*"
	listener Listener
	version  int64
}

// parseTagExpression splits "TagA || TagB" into its trimmed, non-empty tags; "*" and "" match
// everything (nil).
func parseTagExpression(expr string) []string {
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == protocol.SubAll {
		return nil
	}
	var tags []string
	for _, t := range strings.Split(expr, "||") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	slices.Sort(tags)
	return tags
}

func newSubscription(topic, expr string, l Listener) *subscription {
	s := &subscription{topic: topic, expr: strings.TrimSpace(expr), listener: l, version: time.Now().UnixNano()}
	if s.expr == "" {
		s.expr = protocol.SubAll
	}
	if tags := parseTagExpression(s.expr); tags != nil {
		s.tags = make(map[string]struct{}, len(tags))
		for _, t := range tags {
			s.tags[t] = struct{}{}
		}
	}
	return s
}

// matches reports whether a message with the given TAGS passes the client-side filter: the
// whole tag string must be in the set (docs/protocol.md §5.6).
func (s *subscription) matches(tags string) bool {
	if s.tags == nil {
		return true
	}
	_, ok := s.tags[tags]
	return ok
}

// data is the subscription as heartbeats carry it. Tag codes are Java's String.hashCode, which
// is what brokers store in the consume queue; the set is sorted as strings, as the Go client
// sorts it.
func (s *subscription) data() protocol.SubscriptionData {
	d := protocol.SubscriptionData{Topic: s.topic, SubString: s.expr, TagsSet: []string{},
		CodeSet: protocol.TagCodes{}, SubVersion: s.version, ExpressionType: protocol.ExpressionTag}
	tags := parseTagExpression(s.expr)
	if tags == nil {
		return d
	}
	d.TagsSet = tags
	for _, t := range tags {
		d.CodeSet = append(d.CodeSet, message.JavaStringHash(t))
	}
	slices.SortFunc(d.CodeSet, func(a, b int32) int {
		return strings.Compare(strconv.Itoa(int(a)), strconv.Itoa(int(b)))
	})
	return d
}
