// Package filter is the broker's subscription: a consumer group's expression of one topic,
// compiled once (tags into tag strings and Java hash codes, SQL92 into internal/sql92's tree)
// and evaluated by the store for every message a pull reads (storage.Filter), and the answers
// RocketMQ gives to expressions the broker cannot filter by. It holds no state of its own: the
// core's heartbeat and pull processors build subscriptions, the client registry
// (internal/broker/clients) keeps a group's, and the parked pulls (internal/broker/longpoll)
// hold a pull's.
package filter

import (
	"strings"
	"unsafe"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/internal/sql92"
	"github.com/mqgo/mq/storage"
)

// Subscription is a consumer group's subscription of one topic, compiled for filtering pulls.
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
//
// A Subscription is read-only once built: one is shared by every pull of its group (and Parse
// shares one "*" between all pulls that carry it).
type Subscription struct {
	data protocol.SubscriptionData
	// all: "*", an empty expression, or a type the broker does not evaluate: no broker-side
	// filtering.
	all   bool
	tags  map[string]struct{}
	codes map[int64]struct{}
	// sql is the compiled SQL92 expression; nil for other types, or one that did not compile.
	sql *sql92.Expr
}

// New compiles a heartbeat's subscription.
func New(d protocol.SubscriptionData) *Subscription {
	s := &Subscription{data: d}
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

// Parse builds a subscription from a pull header's expression (RocketMQ FilterAPI.build).
func Parse(topic, expr, expressionType string) *Subscription {
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
	return New(d)
}

// subAll is the shared, read-only "*" subscription of pulls that carry their own expression.
var subAll = New(protocol.SubscriptionData{SubString: protocol.SubAll, ExpressionType: protocol.ExpressionTag})

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

// Filter returns the storage filter of the subscription, nil when it matches everything.
func (s *Subscription) Filter() storage.Filter {
	if s == nil || s.all {
		return nil
	}
	return s
}

// IsMatchedByConsumeQueue implements storage.Filter.
func (s *Subscription) IsMatchedByConsumeQueue(tagsCode int64) bool {
	if s.all || s.sql != nil {
		return true
	}
	_, ok := s.codes[tagsCode]
	return ok
}

// IsMatchedByCommitLog implements storage.Filter: the record's TAGS must be one of the tags, or
// its properties must make the SQL92 expression true.
func (s *Subscription) IsMatchedByCommitLog(record []byte) bool {
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

// Topic is the subscribed topic.
func (s *Subscription) Topic() string { return s.data.Topic }

// SubVersion is the version the client stamped the subscription with: a registered one is
// replaced only by a newer one, and a pull asking a newer one than registered is refused.
func (s *Subscription) SubVersion() int64 { return s.data.SubVersion }

// Data is the subscription as the client sent it (for admin reads).
func (s *Subscription) Data() protocol.SubscriptionData { return s.data }

// Shared reports whether s is the one read-only "*" subscription Parse hands every pull that
// carries it: a parked pull keeps nothing of its own for it.
func (s *Subscription) Shared() bool { return s == subAll }

// Size reports what a subscription compiled for one pull keeps beyond its fixed parts, for the
// parked-pull caps (longpoll.Slots): the length of its expression, its number of tags (as sent
// or as split from the expression, whichever is more) and the size of its compiled SQL92
// expression (0 for any other type).
func (s *Subscription) Size() (expr, tags, compiled int) {
	if s.sql != nil {
		compiled = s.sql.Size()
	}
	return len(s.data.SubString), max(len(s.data.TagsSet), len(s.tags)), compiled
}
