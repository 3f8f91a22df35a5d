package route

import (
	"strconv"
	"unicode/utf8"
)

// Hand-written JSON helpers. The route body's shape is fixed by REMOTING.md §3.1 and the official
// Go client parses brokerAddrs by hand (§3.1.2), so the encoder controls every byte: compact, no
// whitespace, keys in a fixed order, broker ids in ascending numeric order.

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string: quotes, backslashes and control characters escaped,
// invalid UTF-8 replaced by U+FFFD as encoding/json does.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

// appendStringList writes ["a","b"] ([] when empty).
func appendStringList(dst []byte, list []string) []byte {
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// quoteNumericKeys rewrites object keys written as bare numbers, as Java's fastjson writes the
// Long keys of brokerAddrs ({0:"10.0.0.5:10911"}), into JSON strings ({"0":"10.0.0.5:10911"}) so
// encoding/json accepts them. Strings, array elements and values are copied untouched. It returns
// b itself when there is nothing to rewrite; it never fails (malformed input stays malformed for
// the JSON decoder to report).
func quoteNumericKeys(b []byte) []byte {
	var (
		out       []byte
		last      int
		stack     []byte // open containers: '{' or '['
		expectKey bool
	)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			i = j // the closing quote, or past the end
			expectKey = false
		case '{':
			stack = append(stack, '{')
			expectKey = true
		case '[':
			stack = append(stack, '[')
			expectKey = false
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1] == '{'
		case ' ', '\t', '\n', '\r':
		default:
			if expectKey && (c == '-' || (c >= '0' && c <= '9')) {
				j := i + 1
				for j < len(b) && isNumberByte(b[j]) {
					j++
				}
				out = append(out, b[last:i]...)
				out = append(out, '"')
				out = append(out, b[i:j]...)
				out = append(out, '"')
				last = j
				i = j - 1
			}
			expectKey = false
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
