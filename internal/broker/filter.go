package broker

import (
	"strings"
	"unsafe"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/internal/sql92"
	"github.com/mqgo/mq/storage"
)

// subscription is a consumer group's subscription of one topic, compiled for filtering pulls.
//
// Tag subscriptions are decided by tag strings (docs/protocol.md §9.8): the ConsumeQueue test
// compares the unit's tag code with Java hash codes recomputed here from tagsSet (the Go client
// sends UTF-8 byte hashes in codeSet, which differ for non-ASCII tags), and the CommitLog test
// compares the record's TAGS with tagsSet, so a hash collision never delivers a foreign tag.
//
// SQL92 subscriptions pass every ConsumeQueue unit (RocketMQ's bloom filter of the properties
// is an optimisation mq leaves out) and are evaluated over the record's properties. Other
// expression types are not evaluated: a pull filtered by one is refused before the store is
// read (expression.go), so they never select messages.
type subscription struct {
	data protocol.SubscriptionData
	// all: "*", an empty expression, or a type the broker does not evaluate: no broker-side
	// filtering.
	all   bool
	tags  map[string]struct{}
	codes map[int64]struct{}
	// sql is the compiled SQL92 expression; nil for other types, or one that did not compile.
	sql *sql92.Expr
}

// newSubscription compiles a heartbeat's subscription.
func newSubscription(d protocol.SubscriptionData) *subscription {
	s := &subscription{data: d}
	if d.ExpressionType == protocol.ExpressionSQL92 && !d.ClassFilterMode {
		// A bad expression leaves sql nil: pulls by it are FILTER_DATA_NOT_EXIST.
		s.sql, _ = sql92.Compile(d.SubString)
		return s
	}
	if d.ClassFilterMode || !protocol.IsTagType(d.ExpressionType) || isSubAll(d.SubString) {
		s.all = true
		return s
	}
	tags := d.TagsSet
	if len(tags) == 0 && len(d.CodeSet) == 0 {
		tags = splitTags(d.SubString)
	}
	s.tags = make(map[string]struct{}, len(tags))
	s.codes = make(map[int64]struct{}, len(tags)+len(d.CodeSet))
	for _, t := range tags {
		s.tags[t] = struct{}{}
		s.codes[message.TagsHashCode(t)] = struct{}{}
	}
	if len(s.tags) == 0 {
		// A Java-style subscription with codes only: trust them, tags unknown.
		for _, c := range d.CodeSet {
			s.codes[int64(c)] = struct{}{}
		}
		s.tags = nil
	}
	if len(s.tags) == 0 && len(s.codes) == 0 {
		s.all = true
	}
	return s
}

// parseSubscription builds a subscription from a pull header's expression (RocketMQ
// FilterAPI.build).
func parseSubscription(topic, expr, expressionType string) *subscription {
	if protocol.IsTagType(expressionType) && isSubAll(expr) {
		return subAll // the pull consumer's usual "*": nothing to compile
	}
	d := protocol.SubscriptionData{Topic: topic, SubString: strings.TrimSpace(expr), ExpressionType: expressionType}
	if d.ExpressionType == "" {
		d.ExpressionType = protocol.ExpressionTag
	}
	if protocol.IsTagType(expressionType) && !isSubAll(d.SubString) {
		d.TagsSet = splitTags(d.SubString)
	}
	if d.SubString == "" {
		d.SubString = protocol.SubAll
	}
	return newSubscription(d)
}

// subAll is the shared, read-only "*" subscription of pulls that carry their own expression.
var subAll = newSubscription(protocol.SubscriptionData{SubString: protocol.SubAll, ExpressionType: protocol.ExpressionTag})

func isSubAll(expr string) bool {
	expr = strings.TrimSpace(expr)
	return expr == "" || expr == protocol.SubAll
}

// splitTags splits "a || b" into its trimmed, non-empty tags.
func splitTags(expr string) []string {
	var out []string
	for t := range strings.SplitSeq(expr, "||") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// filter returns the storage filter of the subscription, nil when it matches everything.
func (s *subscription) filter() storage.Filter {
	if s == nil || s.all {
		return nil
	}
	return s
}

// IsMatchedByConsumeQueue implements storage.Filter.
func (s *subscription) IsMatchedByConsumeQueue(tagsCode int64) bool {
	if s.all || s.sql != nil {
		return true
	}
	_, ok := s.codes[tagsCode]
	return ok
}

// IsMatchedByCommitLog implements storage.Filter: the record's TAGS must be one of the tags, or
// its properties must make the SQL92 expression true.
func (s *subscription) IsMatchedByCommitLog(record []byte) bool {
	if s.all || s.tags == nil && s.sql == nil {
		return true
	}
	var r message.Record
	if _, err := message.DecodeRecord(record, &r, false); err != nil {
		return true // the client decides; never lose a message to our own parsing
	}
	if s.sql != nil {
		return s.sql.Match(func(name string) (string, bool) {
			v, ok := message.PropertyValue(r.Properties, name)
			// The value is read only while Match runs, and the record outlives it.
			return unsafe.String(unsafe.SliceData(v), len(v)), ok
		})
	}
	tags, ok := message.PropertyValue(r.Properties, message.PropertyTags)
	if !ok {
		return false
	}
	_, ok = s.tags[string(tags)]
	return ok
}
