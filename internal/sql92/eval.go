package sql92

import (
	"math"
	"strconv"
	"strings"
)

// kind is the Java class a RocketMQ expression value would have at run time; the conversions
// between them follow ComparisonExpression.__compare, which treats Integer and Long apart.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindInt  // java.lang.Integer: an integer literal within int32
	kindLong // java.lang.Long: an integer literal beyond int32
	kindDouble
	kindString
	// kindErr is an exception thrown mid-evaluation: RocketMQ's broker catches it and treats the
	// whole message as not matching, so it passes through AND, OR and NOT unchanged.
	kindErr
)

type value struct {
	kind kind
	b    bool
	i    int64
	f    float64
	s    string
}

var (
	nullValue  = value{kind: kindNull}
	trueValue  = value{kind: kindBool, b: true}
	falseValue = value{kind: kindBool}
	errValue   = value{kind: kindErr}
)

func boolValue(b bool) value {
	if b {
		return trueValue
	}
	return falseValue
}

type opcode uint8

const (
	opConst opcode = iota
	opProp
	opNegate
	opBoolCast // a bare property used as a condition: UnaryExpression.createBooleanCast
	opNot
	opAnd
	opOr
	opEq
	opGt
	opGe
	opLt
	opLe
	opIn
)

type node struct {
	op opcode
	// boolean is RocketMQ's compile-time "instanceof BooleanExpression", which decides what may
	// stand where a condition is expected and what may be compared with < and >.
	boolean bool
	depth   int
	val     value  // opConst
	name    string // opProp
	kids    []*node
	notIn   bool
	inList  []string            // opIn with few elements
	inSet   map[string]struct{} // opIn with many
	inLen   int                 // the elements listed, duplicates included (Expr.Size)
}

// inSetMin is where a map beats scanning the list (RocketMQ switches to a HashSet at 5).
const inSetMin = 8

func (n *node) eval(prop func(string) (string, bool)) value {
	switch n.op {
	case opConst:
		return n.val
	case opProp:
		s, ok := prop(n.name)
		if !ok {
			return nullValue
		}
		return value{kind: kindString, s: s}
	case opNegate:
		return negate(n.kids[0].eval(prop))
	case opBoolCast:
		v := n.kids[0].eval(prop)
		if v.kind == kindString {
			return falseValue
		}
		return v
	case opNot:
		v := n.kids[0].eval(prop)
		if v.kind == kindBool {
			return boolValue(!v.b)
		}
		return v
	case opAnd:
		result := trueValue
		for _, k := range n.kids {
			switch v := k.eval(prop); {
			case v.kind == kindErr:
				return v
			case v.kind == kindBool && !v.b:
				return falseValue
			case v.kind != kindBool:
				result = nullValue
			}
		}
		return result
	case opOr:
		result := falseValue
		for _, k := range n.kids {
			switch v := k.eval(prop); {
			case v.kind == kindErr:
				return v
			case v.kind == kindBool && v.b:
				return trueValue
			case v.kind != kindBool:
				result = nullValue
			}
		}
		return result
	case opEq:
		return evalEqual(n.kids[0].eval(prop), n.kids[1], prop)
	case opGt, opGe, opLt, opLe:
		return evalRelation(n.op, n.kids[0], n.kids[1], prop)
	case opIn:
		v := n.kids[0].eval(prop)
		if v.kind != kindString {
			return v
		}
		return boolValue(n.contains(v.s) != n.notIn)
	}
	return errValue
}

func (n *node) contains(s string) bool {
	if n.inSet != nil {
		_, ok := n.inSet[s]
		return ok
	}
	for _, e := range n.inList {
		if e == s {
			return true
		}
	}
	return false
}

func negate(v value) value {
	switch v.kind {
	case kindInt:
		v.i = int64(-int32(v.i))
	case kindLong:
		v.i = -v.i
	case kindDouble:
		v.f = -v.f
	case kindErr:
	default:
		return nullValue
	}
	return v
}

// evalEqual is ComparisonExpression.doCreateEqual: a missing left side is unknown but a missing
// right side is plainly unequal, so "a = b" and "b = a" differ when only b is set.
func evalEqual(lv value, right *node, prop func(string) (string, bool)) value {
	if lv.kind == kindErr {
		return lv
	}
	rv := right.eval(prop)
	switch {
	case rv.kind == kindErr:
		return rv
	case lv.kind == kindNull && rv.kind == kindNull:
		return trueValue
	case lv.kind == kindNull:
		return nullValue
	case rv.kind == kindNull:
		return falseValue
	}
	c, ok := javaCompare(lv, rv)
	if !ok {
		return errValue
	}
	return boolValue(c == 0)
}

func evalRelation(op opcode, left, right *node, prop func(string) (string, bool)) value {
	lv := left.eval(prop)
	if lv.kind == kindNull || lv.kind == kindErr {
		return lv
	}
	rv := right.eval(prop)
	if rv.kind == kindNull || rv.kind == kindErr {
		return rv
	}
	var c int
	if lv.kind == kindString && rv.kind == kindString {
		// Two strings are compared only as numbers: ComparisonExpression.evaluate.
		l, lok := javaParseDouble(lv.s)
		r, rok := javaParseDouble(rv.s)
		if !lok || !rok {
			return errValue
		}
		c = javaDoubleCompare(l, r)
	} else {
		var ok bool
		if c, ok = javaCompare(lv, rv); !ok {
			return errValue
		}
	}
	switch op {
	case opGt:
		return boolValue(c > 0)
	case opGe:
		return boolValue(c >= 0)
	case opLt:
		return boolValue(c < 0)
	default:
		return boolValue(c <= 0)
	}
}

// javaCompare is ComparisonExpression.__compare with string conversion on (as
// SelectorParser.parse sets it): the left operand's class decides how the right one converts,
// a string that does not parse is an exception (ok false), and unrelated classes compare as -1.
func javaCompare(lv, rv value) (int, bool) {
	if lv.kind == rv.kind {
		return compareSameKind(lv, rv), true
	}
	switch lv.kind {
	case kindBool:
		// RocketMQ casts the Boolean itself to String here: a ClassCastException.
		return -1, rv.kind != kindString
	case kindInt, kindLong:
		switch rv.kind {
		case kindInt, kindLong:
			return cmpInt(lv.i, rv.i), true
		case kindDouble:
			return javaDoubleCompare(float64(lv.i), rv.f), true
		case kindString:
			r, ok := javaParseInt(rv.s, lv.kind == kindInt)
			return cmpInt(lv.i, r), ok
		}
	case kindDouble:
		switch rv.kind {
		case kindInt, kindLong:
			return javaDoubleCompare(lv.f, float64(rv.i)), true
		case kindString:
			r, ok := javaParseDouble(rv.s)
			return javaDoubleCompare(lv.f, r), ok
		}
	case kindString:
		switch rv.kind {
		case kindBool:
			return cmpBool(strings.EqualFold(lv.s, "true"), rv.b), true
		case kindInt, kindLong:
			l, ok := javaParseInt(lv.s, rv.kind == kindInt)
			return cmpInt(l, rv.i), ok
		case kindDouble:
			l, ok := javaParseDouble(lv.s)
			return javaDoubleCompare(l, rv.f), ok
		}
	}
	return -1, true
}

func compareSameKind(lv, rv value) int {
	switch lv.kind {
	case kindBool:
		return cmpBool(lv.b, rv.b)
	case kindInt, kindLong:
		return cmpInt(lv.i, rv.i)
	case kindDouble:
		return javaDoubleCompare(lv.f, rv.f)
	case kindString:
		return strings.Compare(lv.s, rv.s)
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// javaDoubleCompare is Double.compareTo: NaN equals itself and is above +Inf, -0.0 is below 0.0.
func javaDoubleCompare(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	ab, bb := javaDoubleBits(a), javaDoubleBits(b)
	switch {
	case ab < bb:
		return -1
	case ab > bb:
		return 1
	}
	return 0
}

func javaDoubleBits(f float64) int64 {
	if math.IsNaN(f) {
		return 0x7ff8000000000000
	}
	return int64(math.Float64bits(f))
}

// javaParseInt is Integer.valueOf (int32) or Long.valueOf: an optional sign and decimal digits,
// nothing else, in range. It never allocates, unlike strconv's error path.
func javaParseInt(s string, int32Range bool) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
		if s == "" {
			return 0, false
		}
	}
	limit := uint64(math.MaxInt64)
	if int32Range {
		limit = math.MaxInt32
	}
	if neg {
		limit++
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if n > limit {
			return 0, false
		}
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// javaParseDouble is Double.valueOf: surrounding control characters and spaces trimmed, "NaN"
// and "Infinity" spelled exactly, decimal or hexadecimal (with a binary exponent) forms, an
// optional f/F/d/D suffix, and no Go-only spellings (underscores, "inf").
func javaParseDouble(s string) (float64, bool) {
	if s != "" && (s[0] <= ' ' || s[len(s)-1] <= ' ') {
		s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	}
	body := s
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	switch body {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'f', 'F', 'd', 'D':
			s, body = s[:n-1], body[:len(body)-1]
		}
	}
	if !javaFloatSyntax(body) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func javaFloatSyntax(s string) bool {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		i, digits := 2, 0
		for ; i < len(s) && isHexDigit(s[i]); i++ {
			digits++
		}
		if i < len(s) && s[i] == '.' {
			for i++; i < len(s) && isHexDigit(s[i]); i++ {
				digits++
			}
		}
		if digits == 0 || i == len(s) || (s[i] != 'p' && s[i] != 'P') {
			return false
		}
		return exponentDigits(s[i+1:])
	}
	i, digits := 0, 0
	for ; i < len(s) && isDigit(s[i]); i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && isDigit(s[i]); i++ {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != 'e' && s[i] != 'E' {
		return false
	}
	return exponentDigits(s[i+1:])
}

func exponentDigits(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
