package route

import (
	"strconv"

	"github.com/mqgo/mq/internal/jsonenc"
)

// Hand-written JSON helpers. The route body's shape is fixed by docs/protocol.md §3.1 and the official
// Go client parses brokerAddrs by hand (§3.1.2), so the encoder controls every byte: compact, no
// whitespace, keys in a fixed order, broker ids in ascending numeric order.

// appendString writes s as a JSON string.
func appendString(dst []byte, s string) []byte { return jsonenc.AppendString(dst, s) }

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
