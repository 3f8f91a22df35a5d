// Package names is the one validation of the topic and group names that arrive from the network
// (RocketMQ's TopicValidator and Validators.checkGroup): the broker's request guard, the name
// server, and the producer and consumer options all call it, so a name one of them accepts is a
// name every other accepts.
//
// A valid name is 1..MaxTopicBytes (topics) or 1..MaxGroupBytes (groups) bytes of
// [%|a-zA-Z0-9_-]. The charset alone keeps a valid name from being a path ("/", "\", ".", NUL
// are outside it), from splitting an offset-table key ("topic@group": '@' is outside it) and from
// carrying invalid UTF-8 into a JSON file or remark (every allowed byte is ASCII).
//
// The checks are a loop over at most MaxGroupBytes bytes that allocates nothing for a valid
// name, so they may run on the send path. An invalid name costs one *Error, whose text quotes at
// most quoteMaxBytes of the name with Go escapes: a 1 MiB name never becomes a 1 MiB remark, and
// the remark is valid UTF-8 whatever the name held.
//
//	if err := names.CheckTopic(topic); err != nil {
//		return remoting.NewResponse(remoting.SystemError, "topic: "+err.Error())
//	}
package names

import (
	"errors"
	"strconv"
	"strings"
)

// Limits and prefixes (RocketMQ TopicValidator, Validators and MixAll).
const (
	// MaxTopicBytes is TopicValidator.TOPIC_MAX_LENGTH, also the most a stored record's one-byte
	// topic length admits for Java readers.
	MaxTopicBytes = 127
	// MaxGroupBytes is Validators.CHARACTER_MAX_LENGTH.
	MaxGroupBytes = 255
	// RetryPrefix starts a consumer group's retry topic (MixAll.RETRY_GROUP_TOPIC_PREFIX).
	RetryPrefix = "%RETRY%"
	// DLQPrefix starts a consumer group's dead-letter topic (MixAll.DLQ_GROUP_TOPIC_PREFIX).
	DLQPrefix = "%DLQ%"
	// MaxRetryGroupBytes is the longest group whose retry topic RetryPrefix+group is still a
	// valid topic (its dead-letter topic is shorter).
	MaxRetryGroupBytes = MaxTopicBytes - len(RetryPrefix)
	// Pattern is the allowed charset in RocketMQ's words (TopicValidator.VALID_PATTERN_STR).
	Pattern = "^[%|a-zA-Z0-9_-]+$"
)

// quoteMaxBytes bounds how much of a bad name an error quotes.
const quoteMaxBytes = 64

// ErrInvalid is wrapped by every *Error.
var ErrInvalid = errors.New("invalid name")

// Kind says what a name names.
type Kind uint8

// Kinds of names.
const (
	Topic Kind = iota + 1
	Group
)

func (k Kind) String() string {
	switch k {
	case Topic:
		return "topic"
	case Group:
		return "group"
	}
	return "name"
}

// Rule is the rule a name broke.
type Rule uint8

// Rules, in the order they are checked: length first, so a hostile name costs at most
// MaxGroupBytes steps.
const (
	// Empty: the name is "".
	Empty Rule = iota + 1
	// TooLong: the name is longer than its kind allows.
	TooLong
	// RetryTooLong: a group valid as a group whose retry topic would be too long
	// (CheckRetryGroup).
	RetryTooLong
	// IllegalChar: a byte outside Pattern.
	IllegalChar
)

// Error is an invalid name: which kind, which rule, and where. It quotes a bounded prefix of the
// name, never the whole of it.
type Error struct {
	Kind Kind
	Rule Rule
	// Len is the name's length in bytes; Max the limit it broke (TooLong, RetryTooLong).
	Len, Max int
	// At is the index of the first byte outside Pattern, Byte that byte (IllegalChar).
	At   int
	Byte byte
	// prefix is a copy of the name's first quoteMaxBytes bytes (a copy, so a huge request
	// is not kept alive by its error).
	prefix string
}

func newError(k Kind, r Rule, name string, limit, at int) *Error {
	e := &Error{Kind: k, Rule: r, Len: len(name), Max: limit, At: at,
		prefix: strings.Clone(name[:min(len(name), quoteMaxBytes)])}
	if r == IllegalChar {
		e.Byte = name[at]
	}
	return e
}

// Error names the rule and quotes the name (Go syntax, so the text is valid UTF-8 and
// printable whatever the name held).
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind.String())
	if e.Rule != Empty {
		b.WriteByte(' ')
		b.WriteString(e.Quoted())
	}
	switch e.Rule {
	case Empty:
		b.WriteString(" is empty")
	case TooLong:
		b.WriteString(" is longer than the max length ")
		b.WriteString(strconv.Itoa(e.Max))
		if e.Len <= quoteMaxBytes { // else Quote said how long it is
			b.WriteString(" (")
			b.WriteString(strconv.Itoa(e.Len))
			b.WriteString(" bytes)")
		}
	case RetryTooLong:
		b.WriteString(" is too long for a consumer group: at most ")
		b.WriteString(strconv.Itoa(e.Max))
		b.WriteString(" bytes, so that its retry topic " + RetryPrefix + "<group> fits the " +
			strconv.Itoa(MaxTopicBytes) + "-byte topic limit")
	case IllegalChar:
		b.WriteString(" contains illegal characters (")
		b.WriteString(strconv.QuoteToASCII(string([]byte{e.Byte})))
		b.WriteString(" at byte ")
		b.WriteString(strconv.Itoa(e.At))
		b.WriteString("), allowing only " + Pattern)
	}
	return b.String()
}

// Quoted is the bad name as Error quotes it: a bounded, escaped prefix and its length.
func (e *Error) Quoted() string { return Quote(e.prefix, e.Len) }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Unwrap() error { return ErrInvalid }

// Quote renders the start of a name for a message: Go-quoted ASCII of at most quoteMaxBytes
// bytes, then how long the whole name was when it was cut. n is the name's full length (callers
// that kept only a prefix pass the original length).
func Quote(name string, n int) string {
	if len(name) > quoteMaxBytes {
		name = name[:quoteMaxBytes]
	}
	q := strconv.QuoteToASCII(name)
	if n > len(name) {
		q += "... (" + strconv.Itoa(n) + " bytes)"
	}
	return q
}

// validChar reports whether c is in Pattern's charset.
func validChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '%' || c == '|' || c == '_' || c == '-'
}

// check is the one loop: length against limit, then each byte against the charset.
func check(k Kind, name string, limit int) error {
	if name == "" {
		return newError(k, Empty, name, limit, 0)
	}
	if len(name) > limit {
		return newError(k, TooLong, name, limit, 0)
	}
	for i := 0; i < len(name); i++ {
		if !validChar(name[i]) {
			return newError(k, IllegalChar, name, limit, i)
		}
	}
	return nil
}

// CheckTopic returns nil for a valid topic name, else an *Error. It does not allocate for a
// valid name.
func CheckTopic(name string) error { return check(Topic, name, MaxTopicBytes) }

// CheckGroup returns nil for a valid producer or consumer group name, else an *Error.
func CheckGroup(name string) error { return check(Group, name, MaxGroupBytes) }

// CheckRetryGroup checks a consumer group where the broker builds its retry and dead-letter
// topics from it: a valid group of at most MaxRetryGroupBytes bytes. RocketMQ 4.x accepts a
// longer group and then fails to store every message sent back for it; refusing it up front
// says why.
func CheckRetryGroup(name string) error {
	if err := CheckGroup(name); err != nil {
		return err
	}
	if len(name) > MaxRetryGroupBytes {
		return newError(Group, RetryTooLong, name, MaxRetryGroupBytes, 0)
	}
	return nil
}

// ValidTopic reports whether CheckTopic accepts name.
func ValidTopic(name string) bool { return CheckTopic(name) == nil }

// ValidGroup reports whether CheckGroup accepts name.
func ValidGroup(name string) bool { return CheckGroup(name) == nil }
