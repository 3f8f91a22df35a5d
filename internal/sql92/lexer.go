package sql92

import "strings"

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokNot
	tokAnd
	tokOr
	tokBetween
	tokIn
	tokTrue
	tokFalse
	tokNull
	tokIs
	tokDecimal
	tokFloat
	tokString
	tokIdent
	tokEq
	tokNe
	tokGt
	tokGe
	tokLt
	tokLe
	tokLParen
	tokComma
	tokRParen
	tokPlus
	tokMinus
)

var tokenNames = [...]string{
	tokEOF: "end of expression", tokNot: "NOT", tokAnd: "AND", tokOr: "OR", tokBetween: "BETWEEN",
	tokIn: "IN", tokTrue: "TRUE", tokFalse: "FALSE", tokNull: "NULL", tokIs: "IS",
	tokDecimal: "integer literal", tokFloat: "decimal literal", tokString: "string literal",
	tokIdent: "property name", tokEq: "'='", tokNe: "'<>'", tokGt: "'>'", tokGe: "'>='",
	tokLt: "'<'", tokLe: "'<='", tokLParen: "'('", tokComma: "','", tokRParen: "')'",
	tokPlus: "'+'", tokMinus: "'-'",
}

// keywords are SelectorParser.jj's reserved words; a longer word (NOTE, ISO) is a property name.
var keywords = map[string]tokenKind{
	"not": tokNot, "and": tokAnd, "or": tokOr, "between": tokBetween, "in": tokIn,
	"true": tokTrue, "false": tokFalse, "null": tokNull, "is": tokIs,
}

type token struct {
	kind tokenKind
	pos  int
	text string // the source bytes of the token
}

type lexer struct {
	src string
	pos int
}

// next returns the following token. Its rules are the token definitions of RocketMQ 4.9's
// SelectorParser.jj, including their corners: a "--" comment needs a line end to be a comment
// (without one it is two minus signs), "007" is three tokens, and identifiers are ASCII.
func (l *lexer) next() (token, error) {
	if err := l.skipSpaceAndComments(); err != nil {
		return token{}, err
	}
	start := l.pos
	if start >= len(l.src) {
		return token{kind: tokEOF, pos: start}, nil
	}
	c := l.src[start]
	switch {
	case isIdentStart(c):
		end := start + 1
		for end < len(l.src) && isIdentPart(l.src[end]) {
			end++
		}
		l.pos = end
		text := l.src[start:end]
		if len(text) <= len("between") {
			if kind, ok := keywords[strings.ToLower(text)]; ok {
				return token{kind: kind, pos: start, text: text}, nil
			}
		}
		return token{kind: tokIdent, pos: start, text: text}, nil
	case isDigit(c) || c == '.':
		return l.number()
	case c == '\'':
		return l.stringLiteral()
	}
	kind, size := tokEOF, 1
	switch c {
	case '=':
		kind = tokEq
	case '<':
		kind = tokLt
		if l.peekByte(1) == '>' {
			kind, size = tokNe, 2
		} else if l.peekByte(1) == '=' {
			kind, size = tokLe, 2
		}
	case '>':
		kind = tokGt
		if l.peekByte(1) == '=' {
			kind, size = tokGe, 2
		}
	case '(':
		kind = tokLParen
	case ')':
		kind = tokRParen
	case ',':
		kind = tokComma
	case '+':
		kind = tokPlus
	case '-':
		kind = tokMinus
	default:
		return token{}, errorAt(start, "unexpected character %s", quoteRune(l.src[start:]))
	}
	l.pos += size
	return token{kind: kind, pos: start, text: l.src[start:l.pos]}, nil
}

func (l *lexer) peekByte(ahead int) byte {
	if l.pos+ahead < len(l.src) {
		return l.src[l.pos+ahead]
	}
	return 0
}

func (l *lexer) skipSpaceAndComments() error {
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			l.pos++
		case c == '-' && l.peekByte(1) == '-':
			end := strings.IndexAny(l.src[l.pos:], "\r\n")
			if end < 0 {
				return nil
			}
			l.pos += end + 1
		case c == '/' && l.peekByte(1) == '*':
			end := strings.Index(l.src[l.pos+2:], "*/")
			if end < 0 {
				return errorAt(l.pos, "unterminated /* comment")
			}
			l.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

// number scans the longest of the grammar's DECIMAL_LITERAL ("0" or [1-9][0-9]*[lL]?) and
// FLOATING_POINT_LITERAL (digits with a '.', an exponent or both), as JavaCC would.
func (l *lexer) number() (token, error) {
	start := l.pos
	end := start
	for end < len(l.src) && isDigit(l.src[end]) {
		end++
	}
	intDigits := end - start
	isFloat := false
	if end < len(l.src) && l.src[end] == '.' {
		fracStart := end + 1
		fracEnd := fracStart
		for fracEnd < len(l.src) && isDigit(l.src[fracEnd]) {
			fracEnd++
		}
		if intDigits == 0 && fracEnd == fracStart {
			return token{}, errorAt(start, "unexpected character '.'")
		}
		end, isFloat = fracEnd, true
	}
	if expEnd := l.exponentEnd(end); expEnd > end {
		end, isFloat = expEnd, true
	}
	if isFloat {
		l.pos = end
		return token{kind: tokFloat, pos: start, text: l.src[start:end]}, nil
	}
	if l.src[start] == '0' {
		end = start + 1
	} else if end < len(l.src) && (l.src[end] == 'l' || l.src[end] == 'L') {
		end++
	}
	l.pos = end
	return token{kind: tokDecimal, pos: start, text: l.src[start:end]}, nil
}

// exponentEnd returns where an exponent starting at i ends, or i when there is no complete one
// ("1e" and "1e+" are the number 1 followed by more tokens, as in the grammar).
func (l *lexer) exponentEnd(i int) int {
	if i >= len(l.src) || (l.src[i] != 'e' && l.src[i] != 'E') {
		return i
	}
	j := i + 1
	if j < len(l.src) && (l.src[j] == '+' || l.src[j] == '-') {
		j++
	}
	digits := j
	for j < len(l.src) && isDigit(l.src[j]) {
		j++
	}
	if j == digits {
		return i
	}
	return j
}

func (l *lexer) stringLiteral() (token, error) {
	start := l.pos
	i := start + 1
	for {
		q := strings.IndexByte(l.src[i:], '\'')
		if q < 0 {
			return token{}, errorAt(start, "unterminated string literal")
		}
		i += q + 1
		if i < len(l.src) && l.src[i] == '\'' {
			i++
			continue
		}
		l.pos = i
		return token{kind: tokString, pos: start, text: l.src[start:i]}, nil
	}
}

// unquote decodes a string literal's text: the enclosing quotes go and each doubled quote
// becomes one.
func unquote(text string) string {
	body := text[1 : len(text)-1]
	if !strings.Contains(body, "''") {
		return body
	}
	return strings.ReplaceAll(body, "''", "'")
}

func isIdentStart(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
