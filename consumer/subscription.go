package consumer

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
)

// ExpressionType is the language of a MessageSelector's expression.
type ExpressionType string

// Expression types (RocketMQ ExpressionType).
const (
	// TagExpression selects by tag: "*" or "TagA || TagB".
	TagExpression ExpressionType = protocol.ExpressionTag
	// SQL92Expression selects by message properties, e.g. "a > 5 AND b = 'x'". mq nodes
	// evaluate it always; Apache brokers only with property filtering on (RocketMQ
	// enablePropertyFilter) and refuse it otherwise, and Start fails with their answer, as it
	// does for an expression that does not compile.
	SQL92Expression ExpressionType = protocol.ExpressionSQL92
)

// MessageSelector chooses the messages of a topic a subscription receives (RocketMQ
// MessageSelector).
type MessageSelector struct {
	Type       ExpressionType // "" means TagExpression
	Expression string
}

// ByTag selects by tag expression ("*" or "TagA || TagB").
func ByTag(expr string) MessageSelector {
	return MessageSelector{Type: TagExpression, Expression: expr}
}

// BySQL92 selects by an SQL92 expression over message properties.
func BySQL92(expr string) MessageSelector {
	return MessageSelector{Type: SQL92Expression, Expression: expr}
}

// check refuses a selector type the consumer does not know and an empty SQL92 expression
// (RocketMQ FilterAPI.build).
func (s MessageSelector) check() error {
	switch s.Type {
	case "", TagExpression:
		return nil
	case SQL92Expression:
		if strings.TrimSpace(s.Expression) == "" {
			return errors.New("consumer: empty SQL92 expression")
		}
		return nil
	}
	return fmt.Errorf("consumer: unknown expression type %q", string(s.Type))
}

// subscription is one subscribed topic (as brokers know it): its expression, the listener, and
// the parsed tag set the client filters on.
type subscription struct {
	topic    string
	expr     string
	exprType string
	tags     map[string]struct{} // nil for "*" and for expressions that are not tags
	// listener is what the consume services call: the application's listener inside the
	// consume hooks; direct is the application's listener alone (CONSUME_MESSAGE_DIRECTLY).
	listener Listener
	direct   Listener
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

// newSubscription subscribes to topic with a tag expression.
func newSubscription(topic, expr string, l Listener) *subscription {
	return newSelectorSubscription(topic, ByTag(expr), l)
}

// newSelectorSubscription subscribes to topic with sel, which check accepted.
func newSelectorSubscription(topic string, sel MessageSelector, l Listener) *subscription {
	s := &subscription{topic: topic, expr: strings.TrimSpace(sel.Expression), exprType: string(sel.Type),
		listener: l, direct: l, version: time.Now().UnixNano()}
	if s.exprType == "" {
		s.exprType = protocol.ExpressionTag
	}
	if !protocol.IsTagType(s.exprType) {
		return s
	}
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
		CodeSet: protocol.TagCodes{}, SubVersion: s.version, ExpressionType: s.exprType}
	if !protocol.IsTagType(s.exprType) {
		return d
	}
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
