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
	ext := c.ExtFields
	if ext == nil && c.Fields != nil {
		ext = EncodeHeader(c.Fields) // a rare path: what builds Fields asks for ROCKETMQ
	}
	if ext == nil && c.rawExt != "" {
		c.Materialize() // rarer still: a send request read raw, written again in JSON
		ext = c.ExtFields
	}
	for k, v := range ext {
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
	strs   headerStrings
}

const maxJSONDepth = 64

// decodeJSONHeader decodes b into c, failing at extFields entry maxExt+1 (maxExt <= 0: no limit).
func decodeJSONHeader(b []byte, c *Command, maxExt int) error {
	s := jsonScanner{b: b, maxExt: maxExt, strs: headerStrings{b: b}}
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
		// RemotingCommand.code is a Java int: RocketMQ 5's POP and assignment codes (200050...)
		// exceed a short and arrive in JSON headers.
		v, err = s.intValue(32)
		c.Code = int32(v)
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
// The first entries wait in an array on the stack so that the map is made at its final size
// (a map that grows past its first group allocates again); a larger header spills into a map
// as big as the array.
func (s *jsonScanner) extFields() (map[string]string, error) {
	if s.literal("null") {
		return nil, nil
	}
	if !s.consume('{') {
		return nil, s.fail("extFields is not an object")
	}
	var pending [jsonPendingExtFields]struct{ k, v string }
	held := 0
	var m map[string]string
	done := func() map[string]string {
		if m == nil {
			m = make(map[string]string, held)
			for _, e := range pending[:held] {
				m[e.k] = e.v
			}
		}
		return m
	}
	if s.consume('}') {
		return done(), nil
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
			start := s.i
			if _, err = s.number(); err == nil {
				v = s.strs.slice(start, s.i)
			}
		}
		if err != nil {
			return nil, err
		}
		switch {
		case m != nil:
			m[k] = v
		case held < len(pending):
			pending[held] = struct{ k, v string }{k, v}
			held++
		default:
			done()
			m[k] = v
		}
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			return done(), nil
		}
		return nil, s.fail("expected ',' or '}' in extFields")
	}
}

// jsonPendingExtFields is how many extFields entries are held before the map is made: more
// than any RocketMQ header carries (SEND_MESSAGE has 14).
const jsonPendingExtFields = 24

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
		"transactionId", "MSG_REGION", "TRACE_ON", "DefaultRegion",
		"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"} {
		m[s] = s
	}
	return m
}()

// maxInternedBytes is the length of the longest interned string: a longer piece is not looked up.
var maxInternedBytes = func() int {
	n := 0
	for s := range internedStrings {
		n = max(n, len(s))
	}
	return n
}()

// internedOneByte and internedByLen hold the interned strings of one byte by that byte and the
// longer ones by length, so that most pieces of a header are told apart from them by a length
// and a byte or two, without hashing: every key and value of every header is looked up (the
// map's hash was 4 % of an async send's CPU).
var internedOneByte, internedByLen = func() (one [256]string, byLen [][]string) {
	byLen = make([][]string, maxInternedBytes+1)
	for s := range internedStrings {
		switch len(s) {
		case 0:
		case 1:
			one[s[0]] = s
		default:
			byLen[len(s)] = append(byLen[len(s)], s)
		}
	}
	return one, byLen
}()

// interned returns the interned string equal to piece, if there is one.
func interned(piece []byte) (string, bool) {
	switch {
	case len(piece) == 0:
		return "", true
	case len(piece) == 1:
		s := internedOneByte[piece[0]]
		return s, s != ""
	case len(piece) > maxInternedBytes:
		return "", false
	}
	for _, s := range internedByLen[len(piece)] {
		if s[0] == piece[0] && s == string(piece) { // the comparison does not allocate
			return s, true
		}
	}
	return "", false
}

// headerStringWindow is the most header bytes one string copy covers. A header's strings share
// copies rather than taking one allocation each; a value kept long after its request (a topic
// name the broker stores) keeps its whole copy reachable, so the copy is bounded. 1 KiB holds
// the whole custom header of a typical send.
const headerStringWindow = 1 << 10

// headerStrings turns pieces of one header's bytes into strings: an interned piece is shared,
// any other is a substring of a copy of up to headerStringWindow bytes of b that starts at the
// first piece the previous copy did not hold, and only a piece longer than the window is
// copied alone. A header of a few hundred bytes costs one allocation, whatever its field count.
type headerStrings struct {
	b      []byte
	window string // a copy of b[at:at+len(window)]
	at     int
}

// slice returns b[lo:hi] as a string.
func (s *headerStrings) slice(lo, hi int) string {
	piece := s.b[lo:hi]
	if v, ok := interned(piece); ok {
		return v
	}
	if lo >= s.at && hi <= s.at+len(s.window) {
		return s.window[lo-s.at : hi-s.at]
	}
	if hi-lo > headerStringWindow {
		return string(piece)
	}
	s.window, s.at = string(s.b[lo:min(lo+headerStringWindow, len(s.b))]), lo
	return s.window[:hi-lo]
}

// str reads a JSON string. Invalid UTF-8 becomes U+FFFD, as encoding/json decodes it, so a
// decoded header re-encodes to the same text. The common case (no escapes) shares the header's
// copy (headerStrings).
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
				return replaceInvalidUTF8(raw), nil
			}
			return s.strs.slice(start, s.i-1), nil
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

// escapedStr reads the rest of a string that has escapes, from its first backslash at s.i.
// Unescaping never lengthens a string, so its raw length sizes the one buffer it is built in.
func (s *jsonScanner) escapedStr(start int) (string, error) {
	var buf strings.Builder
	buf.Grow(s.rawStringEnd() - start)
	buf.Write(s.b[start:s.i])
	for s.i < len(s.b) {
		ch := s.b[s.i]
		switch {
		case ch == '"':
			s.i++
			if out := buf.String(); !utf8.ValidString(out) {
				return replaceInvalidUTF8([]byte(out)), nil
			}
			return buf.String(), nil
		case ch < 0x20:
			return "", s.fail("control character in string")
		case ch != '\\':
			buf.WriteByte(ch)
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
			buf.WriteByte(esc)
		case 'b':
			buf.WriteByte('\b')
		case 'f':
			buf.WriteByte('\f')
		case 'n':
			buf.WriteByte('\n')
		case 'r':
			buf.WriteByte('\r')
		case 't':
			buf.WriteByte('\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return "", s.fail("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A pair only when the next escape completes it; otherwise, as encoding/json,
				// this one is U+FFFD and the next escape is read on its own.
				save := s.i
				r2 := rune(-1)
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					s.i += 2
					r2, _ = s.hex4()
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					s.i = save
				}
			}
			buf.WriteRune(r)
		default:
			return "", s.fail("bad escape")
		}
	}
	return "", s.fail("unterminated string")
}

// replaceInvalidUTF8 returns b with every byte that does not start a valid UTF-8 sequence
// replaced by U+FFFD, as encoding/json decodes it (strings.ToValidUTF8 would replace a run of
// them by one).
func replaceInvalidUTF8(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b) + 2*utf8.UTFMax)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}

// rawStringEnd returns the index of the quote closing the string s.i is in, or len(s.b) when
// there is none.
func (s *jsonScanner) rawStringEnd() int {
	for j := s.i; j < len(s.b); j++ {
		switch s.b[j] {
		case '"':
			return j
		case '\\':
			j++
		}
	}
	return len(s.b)
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
