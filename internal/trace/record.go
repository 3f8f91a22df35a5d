// Package trace writes RocketMQ message traces: records of a message's send (Pub) and of each
// listener call that consumed it (SubBefore, SubAfter), in the text format of RocketMQ's
// TraceDataEncoder and the official Go client, batched by a Dispatcher into ordinary messages
// of a trace topic (RMQ_SYS_TRACE_TOPIC by default) whose keys are the traced message ids and
// keys, so the official tools find a message's path by its id.
package trace

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mqgo/mq/internal/names"
)

// Names RocketMQ's TraceConstants and the official Go client use.
const (
	// DefaultTopic is where traces go unless a producer or consumer names another topic.
	DefaultTopic = names.TopicTrace
	// ProducerGroup is the group trace messages are sent under (GROUP_NAME_PREFIX; the Go
	// client's TraceGroupName).
	ProducerGroup = "_INNER_TRACE_PRODUCER"

	contentSep = '\x01' // CONTENT_SPLITOR: between the fields of a record
	fieldSep   = '\x02' // FIELD_SPLITOR: after each record
	// nullKeys stands for no keys in consume records, as the Java console expects.
	nullKeys = "null"
)

// Type is a record's kind, spelled as on the wire.
type Type string

// The record types a producer and a push consumer write.
const (
	Pub       Type = "Pub"
	SubBefore Type = "SubBefore"
	SubAfter  Type = "SubAfter"
)

// MessageType is RocketMQ's MessageType, written as its ordinal.
type MessageType int

// RocketMQ's message types, in their ordinal order.
const (
	NormalMsg MessageType = iota
	TransMsgHalf
	TransMsgCommit
	DelayMsg
)

// Context codes of a SubAfter record: the ordinals of RocketMQ's ConsumeReturnType.
const (
	ConsumeSuccess    = 0
	ConsumeTimeout    = 1
	ConsumeException  = 2
	ConsumeReturnNull = 3
	ConsumeFailed     = 4
)

// Bean is one traced message (RocketMQ TraceBean).
type Bean struct {
	Topic       string
	MsgID       string
	OffsetMsgID string
	Tags        string
	// Keys is the KEYS property: keys separated by spaces.
	Keys       string
	StoreHost  string
	ClientHost string
	RetryTimes int
	BodyLength int
	MsgType    MessageType
}

// Context is one traced event (RocketMQ TraceContext): a send of one message, or the start or
// end of one listener call over one or more messages.
type Context struct {
	Type      Type
	TimeStamp int64 // unix ms
	RegionID  string
	// Group is the producer or consumer group; a namespace prefix ("ns%group") is not written.
	Group       string
	CostTime    int64 // ms
	Success     bool
	RequestID   string // ties a SubBefore to its SubAfter
	ContextCode int
	Beans       []Bean
}

// withoutNamespace drops a "ns%" prefix as the Go client does (exactly one '%').
func withoutNamespace(s string) string {
	if i := strings.IndexByte(s, '%'); i >= 0 && strings.Count(s, "%") == 1 {
		return s[i+1:]
	}
	return s
}

func orNull(s string) string {
	if s == "" {
		return nullKeys
	}
	return s
}

// Append appends c's records to dst in the official Go client's encoding: a Pub record for
// its first bean, a SubBefore or SubAfter record for each bean.
func Append(dst []byte, c *Context) []byte {
	field := func(s string) { dst = append(append(dst, s...), contentSep) }
	last := func(s string) { dst = append(append(dst, s...), fieldSep) }
	num := func(n int64) { dst = append(strconv.AppendInt(dst, n, 10), contentSep) }
	group := withoutNamespace(c.Group)
	switch c.Type {
	case Pub:
		if len(c.Beans) == 0 {
			return dst
		}
		b := c.Beans[0]
		field(string(Pub))
		num(c.TimeStamp)
		field(c.RegionID)
		field(group)
		field(withoutNamespace(b.Topic))
		field(b.MsgID)
		field(b.Tags)
		field(b.Keys)
		field(b.StoreHost)
		num(int64(b.BodyLength))
		num(c.CostTime)
		num(int64(b.MsgType))
		field(b.OffsetMsgID)
		field(strconv.FormatBool(c.Success))
		last(b.ClientHost)
	case SubBefore:
		for _, b := range c.Beans {
			field(string(SubBefore))
			num(c.TimeStamp)
			field(c.RegionID)
			field(group)
			field(c.RequestID)
			field(b.MsgID)
			num(int64(b.RetryTimes))
			field(orNull(b.Keys))
			last(b.ClientHost)
		}
	case SubAfter:
		for _, b := range c.Beans {
			field(string(SubAfter))
			field(c.RequestID)
			field(b.MsgID)
			num(c.CostTime)
			field(strconv.FormatBool(c.Success))
			field(orNull(b.Keys))
			num(int64(c.ContextCode))
			num(c.TimeStamp)
			last(group)
		}
	}
	return dst
}

// Keys returns the keys a trace message carrying c is found by: each bean's message id and
// keys (RocketMQ's TraceTransferBean transKey).
func Keys(c *Context) []string {
	keys := make([]string, 0, 2*len(c.Beans))
	for _, b := range c.Beans {
		keys = append(keys, b.MsgID)
		keys = append(keys, strings.Fields(b.Keys)...)
	}
	return keys
}

// ErrMalformed is a trace record Decode cannot read.
var ErrMalformed = errors.New("trace: malformed record")

// Fields of the shortest record of each type RocketMQ's decoder reads; later fields are
// optional (older clients leave them out, Java's split drops them when empty).
const (
	minPubFields       = 12
	minSubBeforeFields = 8
	minSubAfterFields  = 6
)

// Decode reads the records of a trace message body as RocketMQ's TraceDataEncoder decodes
// them: one Context per record, each with one bean. Records of other types (EndTransaction)
// are skipped; "null" keys of consume records read as none.
func Decode(data string) ([]Context, error) {
	var out []Context
	for rec := range strings.SplitSeq(data, string(fieldSep)) {
		if rec == "" {
			continue
		}
		f := strings.Split(rec, string(contentSep))
		for len(f) > 1 && f[len(f)-1] == "" {
			f = f[:len(f)-1]
		}
		opt := func(i int) string {
			if i < len(f) {
				return f[i]
			}
			return ""
		}
		var c Context
		var b Bean
		var err error
		switch Type(f[0]) {
		case Pub:
			if len(f) < minPubFields {
				return out, fmt.Errorf("%w: Pub with %d fields", ErrMalformed, len(f))
			}
			c = Context{Type: Pub, RegionID: f[2], Group: f[3]}
			b = Bean{Topic: f[4], MsgID: f[5], Tags: f[6], Keys: f[7], StoreHost: f[8]}
			var mt int64
			err = errors.Join(parseInt(f[1], &c.TimeStamp), parseIntInto(f[9], &b.BodyLength),
				parseInt(f[10], &c.CostTime), parseInt(f[11], &mt))
			if mt < 0 || mt > int64(DelayMsg) {
				err = errors.Join(err, fmt.Errorf("%w: message type %d", ErrMalformed, mt))
			}
			b.MsgType = MessageType(mt)
			switch len(f) {
			case minPubFields + 1: // no offset message id
				c.Success = f[12] == "true"
			default:
				b.OffsetMsgID = opt(12)
				c.Success = opt(13) == "true"
				b.ClientHost = opt(14)
			}
		case SubBefore:
			if len(f) < minSubBeforeFields {
				return out, fmt.Errorf("%w: SubBefore with %d fields", ErrMalformed, len(f))
			}
			c = Context{Type: SubBefore, RegionID: f[2], Group: f[3], RequestID: f[4]}
			b = Bean{MsgID: f[5], Keys: fromNull(f[7]), ClientHost: opt(8)}
			err = errors.Join(parseInt(f[1], &c.TimeStamp), parseIntInto(f[6], &b.RetryTimes))
		case SubAfter:
			if len(f) < minSubAfterFields {
				return out, fmt.Errorf("%w: SubAfter with %d fields", ErrMalformed, len(f))
			}
			c = Context{Type: SubAfter, RequestID: f[1], Success: f[4] == "true", Group: opt(8)}
			b = Bean{MsgID: f[2], Keys: fromNull(f[5])}
			err = parseInt(f[3], &c.CostTime)
			if len(f) > 6 {
				err = errors.Join(err, parseIntInto(f[6], &c.ContextCode))
			}
			if len(f) > 8 {
				err = errors.Join(err, parseInt(f[7], &c.TimeStamp))
			}
		default:
			continue
		}
		if err != nil {
			return out, err
		}
		c.Beans = []Bean{b}
		out = append(out, c)
	}
	return out, nil
}

func fromNull(keys string) string {
	if keys == nullKeys {
		return ""
	}
	return keys
}

func parseInt(s string, v *int64) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not a number", ErrMalformed, s)
	}
	*v = n
	return nil
}

func parseIntInto(s string, v *int) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return fmt.Errorf("%w: %q is not a number", ErrMalformed, s)
	}
	*v = int(n)
	return nil
}
