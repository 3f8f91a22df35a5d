package remoting

import (
	"strconv"
	"strings"

	"github.com/mqgo/mq/internal/jsonenc"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON header (serialize type 0) is a flat object; see docs/protocol.md §1.4. It is encoded and
// decoded by hand: the shape is fixed, the official client's extFields must be strings, and the
// generic encoding/json path costs several allocations per frame on the hottest path we have.

func appendJSONHeader(dst []byte, c *Command) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	dst = append(dst, `,"language":"`...)
	dst = append(dst, c.Language.String()...)
	dst = append(dst, `","version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	dst = append(dst, `,"remark":`...)
	dst = appendJSONString(dst, c.Remark)
	dst = append(dst, `,"extFields":{`...)
	first := true
	for k, v := range c.ExtFields {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendJSONString(dst, v)
	}
	dst = append(dst, `},"serializeTypeCurrentRPC":"JSON"}`...)
	return dst
}

// appendJSONString writes s as a JSON string; control characters (the property separators
// 0x01 and 0x02 among them) become \u00XX.
func appendJSONString(dst []byte, s string) []byte { return jsonenc.AppendString(dst, s) }

// jsonScanner walks one JSON header. Depth-limited so hostile nesting cannot exhaust the stack.
type jsonScanner struct {
	b      []byte
	i      int
	depth  int
	maxExt int // extFields entries allowed; <= 0 means no limit
}

const maxJSONDepth = 64

// decodeJSONHeader decodes b into c, failing at extFields entry maxExt+1 (maxExt <= 0: no limit).
func decodeJSONHeader(b []byte, c *Command, maxExt int) error {
	s := jsonScanner{b: b, maxExt: maxExt}
	if !s.consume('{') {
		return s.fail("header is not a JSON object")
	}
	if s.consume('}') {
		return s.end()
	}
	for {
		key, err := s.str()
		if err != nil {
			return err
		}
		if !s.consume(':') {
			return s.fail("missing ':' after key")
		}
		if err := s.field(key, c); err != nil {
			return err
		}
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			return s.end()
		}
		return s.fail("expected ',' or '}'")
	}
}

func (s *jsonScanner) field(key string, c *Command) error {
	var err error
	switch key {
	case "code":
		var v int64
		v, err = s.intValue(16)
		c.Code = int16(v)
	case "version":
		var v int64
		v, err = s.intValue(16)
		c.Version = int16(v)
	case "opaque":
		var v int64
		v, err = s.intValue(32)
		c.Opaque = int32(v)
	case "flag":
		var v int64
		v, err = s.intValue(32)
		c.Flag = int32(v)
	case "language":
		err = s.language(c)
	case "remark":
		c.Remark, err = s.nullableString()
	case "extFields":
		c.ExtFields, err = s.extFields()
	default:
		err = s.skip()
	}
	return err
}

func (s *jsonScanner) fail(msg string) error {
	return malformed("JSON header at byte %d: %s", s.i, msg)
}

func (s *jsonScanner) end() error {
	s.ws()
	if s.i != len(s.b) {
		return s.fail("trailing bytes after header object")
	}
	return nil
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScanner) consume(ch byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ch {
		s.i++
		return true
	}
	return false
}

func (s *jsonScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jsonScanner) literal(word string) bool {
	s.ws()
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

func (s *jsonScanner) number() ([]byte, error) {
	s.ws()
	start := s.i
	for s.i < len(s.b) {
		ch := s.b[s.i]
		if (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' || ch == 'E' {
			s.i++
			continue
		}
		break
	}
	if s.i == start {
		return nil, s.fail("expected a number")
	}
	return s.b[start:s.i], nil
}

func (s *jsonScanner) intValue(bits int) (int64, error) {
	if s.literal("null") {
		return 0, nil
	}
	num, err := s.number()
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseInt(string(num), 10, bits)
	if perr != nil {
		return 0, s.fail("number " + strconv.Quote(string(num)) + " does not fit int" + strconv.Itoa(bits))
	}
	return v, nil
}

func (s *jsonScanner) language(c *Command) error {
	switch s.peek() {
	case '"':
		name, err := s.str()
		c.Language = languageFromName(name)
		return err
	case 'n':
		if s.literal("null") {
			return nil
		}
		return s.fail("bad literal")
	default:
		v, err := s.intValue(16)
		if v >= 0 && v < int64(len(languageNames)) {
			c.Language = Language(v)
		} else {
			c.Language = LanguageOther
		}
		return err
	}
}

func (s *jsonScanner) nullableString() (string, error) {
	if s.literal("null") {
		return "", nil
	}
	return s.str()
}

// extFields decodes the custom header. Values are strings as RocketMQ writes them; null reads as
// "", and a number or boolean keeps its text, so other clients' sloppier headers still decode.
func (s *jsonScanner) extFields() (map[string]string, error) {
	if s.literal("null") {
		return nil, nil
	}
	if !s.consume('{') {
		return nil, s.fail("extFields is not an object")
	}
	m := make(map[string]string, 8)
	if s.consume('}') {
		return m, nil
	}
	for n := 0; ; n++ {
		if s.maxExt > 0 && n == s.maxExt {
			return nil, tooManyExtFields(s.maxExt)
		}
		k, err := s.str()
		if err != nil {
			return nil, err
		}
		if !s.consume(':') {
			return nil, s.fail("missing ':' in extFields")
		}
		var v string
		switch ch := s.peek(); {
		case ch == '"':
			v, err = s.str()
		case ch == 'n' && s.literal("null"):
		case ch == 't' && s.literal("true"):
			v = "true"
		case ch == 'f' && s.literal("false"):
			v = "false"
		default:
			var num []byte
			num, err = s.number()
			v = string(num)
		}
		if err != nil {
			return nil, err
		}
		m[k] = v
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			return m, nil
		}
		return nil, s.fail("expected ',' or '}' in extFields")
	}
}

// internedStrings are header keys and values that recur in nearly every request; decoding them
// to a shared string saves an allocation each.
var internedStrings = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{"code", "language", "version", "opaque", "flag", "remark", "extFields",
		"serializeTypeCurrentRPC", "JSON", "GO", "JAVA", "", "0", "1", "4", "true", "false", "TBW102",
		"topic", "queueId", "sysFlag", "bornTimestamp", "properties", "reconsumeTimes", "unitMode",
		"maxReconsumeTimes", "defaultTopic", "defaultTopicQueueNums", "batch", "bname", "producerGroup",
		"consumerGroup", "queueOffset", "maxMsgNums", "commitOffset", "suspendTimeoutMillis",
		"subscription", "subVersion", "expressionType", "TAG", "20000", "32", "offset", "msgId",
		"nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId",
		"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"} {
		m[s] = s
	}
	return m
}()

// intern returns b as a string, shared for the strings above.
func intern(b []byte) string {
	if v, ok := internedStrings[string(b)]; ok { // the lookup itself does not allocate
		return v
	}
	return string(b)
}

// str reads a JSON string. Invalid UTF-8 becomes U+FFFD, as encoding/json decodes it, so a
// decoded header re-encodes to the same text. The common case (no escapes) costs at most one allocation.
func (s *jsonScanner) str() (string, error) {
	if !s.consume('"') {
		return "", s.fail("expected a string")
	}
	start := s.i
	for s.i < len(s.b) {
		ch := s.b[s.i]
		if ch == '"' {
			raw := s.b[start:s.i]
			s.i++
			if !utf8.Valid(raw) {
				return strings.ToValidUTF8(string(raw), "\uFFFD"), nil
			}
			return intern(raw), nil
		}
		if ch == '\\' {
			return s.escapedStr(start)
		}
		if ch < 0x20 {
			return "", s.fail("control character in string")
		}
		s.i++
	}
	return "", s.fail("unterminated string")
}

func (s *jsonScanner) escapedStr(start int) (string, error) {
	buf := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		ch := s.b[s.i]
		switch {
		case ch == '"':
			s.i++
			return strings.ToValidUTF8(string(buf), "\uFFFD"), nil
		case ch < 0x20:
			return "", s.fail("control character in string")
		case ch != '\\':
			buf = append(buf, ch)
			s.i++
			continue
		}
		s.i++
		if s.i >= len(s.b) {
			break
		}
		esc := s.b[s.i]
		s.i++
		switch esc {
		case '"', '\\', '/':
			buf = append(buf, esc)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return "", s.fail("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					save := s.i
					s.i += 2
					var ok2 bool
					if r2, ok2 = s.hex4(); !ok2 {
						s.i = save
						r2 = -1
					}
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", s.fail("bad escape")
		}
	}
	return "", s.fail("unterminated string")
}

func (s *jsonScanner) hex4() (rune, bool) {
	if len(s.b)-s.i < 4 {
		return 0, false
	}
	var r rune
	for _, ch := range s.b[s.i : s.i+4] {
		r <<= 4
		switch {
		case ch >= '0' && ch <= '9':
			r |= rune(ch - '0')
		case ch >= 'a' && ch <= 'f':
			r |= rune(ch-'a') + 10
		case ch >= 'A' && ch <= 'F':
			r |= rune(ch-'A') + 10
		default:
			return 0, false
		}
	}
	s.i += 4
	return r, true
}

// skip passes over one JSON value of any kind.
func (s *jsonScanner) skip() error {
	switch ch := s.peek(); ch {
	case '"':
		_, err := s.str()
		return err
	case '{', '[':
		closer := byte('}')
		if ch == '[' {
			closer = ']'
		}
		s.depth++
		if s.depth > maxJSONDepth {
			return s.fail("nesting too deep")
		}
		s.i++
		if s.consume(closer) {
			s.depth--
			return nil
		}
		for {
			if ch == '{' {
				if _, err := s.str(); err != nil {
					return err
				}
				if !s.consume(':') {
					return s.fail("missing ':'")
				}
			}
			if err := s.skip(); err != nil {
				return err
			}
			if s.consume(',') {
				continue
			}
			if s.consume(closer) {
				s.depth--
				return nil
			}
			return s.fail("unterminated container")
		}
	case 't':
		if s.literal("true") {
			return nil
		}
	case 'f':
		if s.literal("false") {
			return nil
		}
	case 'n':
		if s.literal("null") {
			return nil
		}
	default:
		_, err := s.number()
		return err
	}
	return s.fail("bad literal")
}
