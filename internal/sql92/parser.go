package sql92

import (
	"math"
	"strconv"
	"strings"
)

// Bounds that keep a hostile subscription cheap to refuse and to evaluate.
const (
	// MaxExpressionBytes bounds the source; IN lists are bounded by it too.
	MaxExpressionBytes = 16 << 10
	// MaxDepth bounds nesting: parentheses, unary operators and the operator tree built from
	// them (chains of AND or OR are one level), so neither Compile nor Match recurses deeply.
	MaxDepth = 64
)

// Expr is a compiled selector; safe for concurrent use.
type Expr struct {
	src  string
	root *node
	size int // Size
}

// Compile parses s. Errors say what was wrong and where (byte offset), never panic.
func Compile(s string) (*Expr, error) {
	if len(s) > MaxExpressionBytes {
		return nil, errorAt(MaxExpressionBytes, "expression longer than %d bytes", MaxExpressionBytes)
	}
	if strings.TrimSpace(s) == "" {
		return nil, errorAt(0, "empty expression")
	}
	p := &parser{lex: lexer{src: s}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	start := p.tok.pos
	n, err := p.orExpr()
	if err != nil {
		return nil, err
	}
	// RocketMQ's parser stops after one expression and ignores what follows; a selector with
	// trailing text is almost surely a mistake, so it is refused here.
	if p.tok.kind != tokEOF {
		return nil, p.unexpected("AND, OR or the end of the expression")
	}
	root, err := asCondition(n, start)
	if err != nil {
		return nil, err
	}
	return &Expr{src: s, root: root, size: len(s) + root.size()}, nil
}

// Size is about how many bytes e keeps in memory: its source and its compiled tree, which may
// be many times longer than the source (a 16 KB chain of "a=1 or" compiles to about a
// megabyte). A caller that keeps expressions from the network charges them by it.
func (e *Expr) Size() int { return e.size }

// Approximate costs of a compiled tree (64-bit): a node with its place in its parent's kids,
// and one element of an IN list or set besides its text.
const (
	nodeBytes    = 176
	inElemBytes  = 48
	stringHeader = 16
)

// size is the approximate memory of the tree under n. The tree is at most MaxDepth deep. An
// IN set is sized for every element listed, duplicates included.
func (n *node) size() int {
	b := nodeBytes + len(n.name) + len(n.val.s) + n.inLen*(stringHeader+inElemBytes)
	for _, s := range n.inList {
		b += len(s)
	}
	for s := range n.inSet {
		b += len(s)
	}
	for _, k := range n.kids {
		b += k.size()
	}
	return b
}

// Match evaluates e for one message: prop returns a property's value ("TAGS" is the tags) and
// whether it is set. Only a true result matches (null/unknown does not), as RocketMQ.
func (e *Expr) Match(prop func(name string) (string, bool)) bool {
	v := e.root.eval(prop)
	return v.kind == kindBool && v.b
}

// String returns the source.
func (e *Expr) String() string { return e.src }

type parser struct {
	lex   lexer
	tok   token
	depth int // recursion into parentheses and unary operators
}

func (p *parser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) unexpected(want string) error {
	got := tokenNames[p.tok.kind]
	if p.tok.kind != tokEOF {
		got += " " + quoteText(p.tok.text)
	}
	return errorAt(p.tok.pos, "expected %s, found %s", want, got)
}

func (p *parser) expect(kind tokenKind) error {
	if p.tok.kind != kind {
		return p.unexpected(tokenNames[kind])
	}
	return p.advance()
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return errorAt(p.tok.pos, "nesting deeper than %d", MaxDepth)
	}
	return nil
}

func (p *parser) orExpr() (*node, error) {
	return p.logicChain(tokOr, opOr, p.andExpr)
}

func (p *parser) andExpr() (*node, error) {
	return p.logicChain(tokAnd, opAnd, p.equalityExpr)
}

// logicChain parses operand (keyword operand)* into one n-ary node: RocketMQ nests them to the
// left, and evaluating the flat list in order gives the same result, short cuts and all.
func (p *parser) logicChain(keyword tokenKind, op opcode, operand func() (*node, error)) (*node, error) {
	start := p.tok.pos
	first, err := operand()
	if err != nil || p.tok.kind != keyword {
		return first, err
	}
	cond, err := asCondition(first, start)
	if err != nil {
		return nil, err
	}
	chain := &node{op: op, boolean: true, kids: []*node{cond}}
	for p.tok.kind == keyword {
		if err := p.advance(); err != nil {
			return nil, err
		}
		start := p.tok.pos
		next, err := operand()
		if err != nil {
			return nil, err
		}
		if cond, err = asCondition(next, start); err != nil {
			return nil, err
		}
		chain.kids = append(chain.kids, cond)
	}
	return withDepth(chain, start)
}

func (p *parser) equalityExpr() (*node, error) {
	left, err := p.comparisonExpr()
	if err != nil {
		return nil, err
	}
	for {
		opPos := p.tok.pos
		switch p.tok.kind {
		case tokEq, tokNe:
			notEqual := p.tok.kind == tokNe
			if err := p.advance(); err != nil {
				return nil, err
			}
			right, err := p.comparisonExpr()
			if err != nil {
				return nil, err
			}
			if left, err = equal(left, right, opPos); err != nil {
				return nil, err
			}
			if notEqual {
				left = not(left)
			}
		case tokIs:
			if err := p.advance(); err != nil {
				return nil, err
			}
			negated := p.tok.kind == tokNot
			if negated {
				if err := p.advance(); err != nil {
					return nil, err
				}
			}
			if err := p.expect(tokNull); err != nil {
				return nil, err
			}
			left = &node{op: opEq, boolean: true, kids: []*node{left, {op: opConst, boolean: true}}}
			if negated {
				left = not(left)
			}
		default:
			return left, nil
		}
		if left, err = withDepth(left, opPos); err != nil {
			return nil, err
		}
	}
}

var relationOps = map[tokenKind]opcode{tokGt: opGt, tokGe: opGe, tokLt: opLt, tokLe: opLe}

func (p *parser) comparisonExpr() (*node, error) {
	left, err := p.unaryExpr()
	if err != nil {
		return nil, err
	}
	for {
		opPos := p.tok.pos
		switch kind := p.tok.kind; kind {
		case tokGt, tokGe, tokLt, tokLe:
			if err := p.advance(); err != nil {
				return nil, err
			}
			right, err := p.unaryExpr()
			if err != nil {
				return nil, err
			}
			if left, err = relation(relationOps[kind], left, right, opPos); err != nil {
				return nil, err
			}
		case tokBetween, tokIn:
			if left, err = p.betweenOrIn(left, false); err != nil {
				return nil, err
			}
		case tokNot:
			// NOT here continues the comparison only as NOT BETWEEN or NOT IN (the grammar's
			// LOOKAHEAD(2)); otherwise it belongs to no rule and ends the expression.
			saved := p.lex
			savedTok := p.tok
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.kind != tokBetween && p.tok.kind != tokIn {
				p.lex, p.tok = saved, savedTok
				return left, nil
			}
			if left, err = p.betweenOrIn(left, true); err != nil {
				return nil, err
			}
		default:
			return left, nil
		}
		if left, err = withDepth(left, opPos); err != nil {
			return nil, err
		}
	}
}

func (p *parser) betweenOrIn(left *node, negated bool) (*node, error) {
	opPos := p.tok.pos
	if p.tok.kind == tokIn {
		if err := p.advance(); err != nil {
			return nil, err
		}
		return p.inList(left, negated, opPos)
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	low, err := p.unaryExpr()
	if err != nil {
		return nil, err
	}
	if err := p.expect(tokAnd); err != nil {
		return nil, err
	}
	high, err := p.unaryExpr()
	if err != nil {
		return nil, err
	}
	return between(left, low, high, negated, opPos)
}

func (p *parser) inList(left *node, negated bool, opPos int) (*node, error) {
	if left.op != opProp {
		return nil, errorAt(opPos, "IN needs a property on its left")
	}
	if err := p.expect(tokLParen); err != nil {
		return nil, err
	}
	var list []string
	for {
		if p.tok.kind != tokString {
			return nil, p.unexpected("a string literal in the IN list")
		}
		list = append(list, unquote(p.tok.text))
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tokComma {
			break
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	if err := p.expect(tokRParen); err != nil {
		return nil, err
	}
	n := &node{op: opIn, boolean: true, kids: []*node{left}, notIn: negated}
	n.inLen = len(list)
	if len(list) >= inSetMin {
		n.inSet = make(map[string]struct{}, len(list))
		for _, s := range list {
			n.inSet[s] = struct{}{}
		}
	} else {
		n.inList = list
	}
	return n, nil
}

func (p *parser) unaryExpr() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	opPos := p.tok.pos
	switch p.tok.kind {
	case tokPlus:
		if err := p.advance(); err != nil {
			return nil, err
		}
		return p.unaryExpr()
	case tokMinus:
		if err := p.advance(); err != nil {
			return nil, err
		}
		operand, err := p.unaryExpr()
		if err != nil {
			return nil, err
		}
		return withDepth(&node{op: opNegate, kids: []*node{operand}}, opPos)
	case tokNot:
		if err := p.advance(); err != nil {
			return nil, err
		}
		start := p.tok.pos
		operand, err := p.unaryExpr()
		if err != nil {
			return nil, err
		}
		cond, err := asCondition(operand, start)
		if err != nil {
			return nil, err
		}
		return withDepth(not(cond), opPos)
	}
	return p.primaryExpr()
}

func (p *parser) primaryExpr() (*node, error) {
	t := p.tok
	var n *node
	switch t.kind {
	case tokLParen:
		if err := p.advance(); err != nil {
			return nil, err
		}
		inner, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		return inner, p.expect(tokRParen)
	case tokIdent:
		n = &node{op: opProp, name: t.text}
	case tokString:
		n = constant(value{kind: kindString, s: unquote(t.text)})
	case tokDecimal:
		v, err := decimalLiteral(t)
		if err != nil {
			return nil, err
		}
		n = constant(v)
	case tokFloat:
		v, err := floatLiteral(t)
		if err != nil {
			return nil, err
		}
		n = constant(v)
	case tokTrue, tokFalse:
		n = &node{op: opConst, boolean: true, val: boolValue(t.kind == tokTrue)}
	case tokNull:
		n = &node{op: opConst, boolean: true, val: nullValue}
	default:
		return nil, p.unexpected("a property, a literal, '(' or a unary operator")
	}
	n.depth = 1
	return n, p.advance()
}

func constant(v value) *node { return &node{op: opConst, val: v} }

// decimalLiteral is ConstantExpression.createFromDecimal: a Long, narrowed to an Integer when it
// fits, which matters because a property compared with it is then parsed as an int32.
func decimalLiteral(t token) (value, error) {
	digits := strings.TrimRight(t.text, "lL")
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return value{}, errorAt(t.pos, "integer literal %s out of the long range", quoteText(t.text))
	}
	if n <= math.MaxInt32 {
		return value{kind: kindInt, i: n}, nil
	}
	return value{kind: kindLong, i: n}, nil
}

// floatLiteral is ConstantExpression.createFloat, which refuses what overflows a double and
// also, through its comparison with Double.MIN_VALUE, every literal that is zero or rounds to it.
func floatLiteral(t token) (value, error) {
	f, err := strconv.ParseFloat(t.text, 64)
	if err != nil || math.IsInf(f, 0) {
		return value{}, errorAt(t.pos, "decimal literal %s greater than the largest double", quoteText(t.text))
	}
	if f == 0 {
		return value{}, errorAt(t.pos, "decimal literal %s is zero or below the smallest double; RocketMQ refuses it (write 0)", quoteText(t.text))
	}
	return value{kind: kindDouble, f: f}, nil
}

func not(n *node) *node { return &node{op: opNot, boolean: true, kids: []*node{n}, depth: n.depth + 1} }

func withDepth(n *node, pos int) (*node, error) {
	depth := 0
	for _, k := range n.kids {
		depth = max(depth, k.depth)
	}
	n.depth = depth + 1
	if n.depth > MaxDepth {
		return nil, errorAt(pos, "expression nested deeper than %d", MaxDepth)
	}
	return n, nil
}

// asCondition is SelectorParser.asBooleanExpression: a condition is a boolean expression or a
// property (true only if it holds a boolean, which a message property, being a string, never does).
func asCondition(n *node, pos int) (*node, error) {
	if n.boolean {
		return n, nil
	}
	if n.op == opProp {
		return withDepth(&node{op: opBoolCast, boolean: true, kids: []*node{n}}, pos)
	}
	return nil, errorAt(pos, "expression does not yield a boolean")
}

// equal is ComparisonExpression.createEqual's checks: NULL is compared only with IS, and a
// TRUE/FALSE literal on the left only with another boolean literal or a non-literal.
func equal(left, right *node, pos int) (*node, error) {
	for _, operand := range []*node{left, right} {
		if operand.op == opConst && operand.val.kind == kindNull {
			return nil, errorAt(pos, "NULL cannot be compared with '=' or '<>' (use IS NULL)")
		}
	}
	if left.op == opConst && right.op == opConst && left.boolean && !right.boolean {
		return nil, errorAt(pos, "a boolean literal cannot be compared with a non-boolean literal")
	}
	return withDepth(&node{op: opEq, boolean: true, kids: []*node{left, right}}, pos)
}

// relation is checkLessThanOperand on both sides: only numbers, properties and arithmetic
// are ordered; string, boolean and NULL literals and conditions are refused.
func relation(op opcode, left, right *node, pos int) (*node, error) {
	for _, operand := range []*node{left, right} {
		if operand.op == opConst && operand.val.kind != kindInt && operand.val.kind != kindLong && operand.val.kind != kindDouble {
			return nil, errorAt(pos, "a %s literal cannot be compared with '<', '<=', '>' or '>='", kindName(operand.val.kind))
		}
		if operand.boolean {
			return nil, errorAt(pos, "a condition cannot be compared with '<', '<=', '>' or '>='")
		}
	}
	return withDepth(&node{op: op, boolean: true, kids: []*node{left, right}}, pos)
}

// between is ComparisonExpression.createBetween and createNotBetween: two literal bounds must be
// non-null and in order, then it is (v >= low AND v <= high) or (v < low OR v > high).
func between(v, low, high *node, negated bool, pos int) (*node, error) {
	if low.op == opConst && high.op == opConst {
		if low.val.kind == kindNull || high.val.kind == kindNull {
			return nil, errorAt(pos, "BETWEEN bounds cannot be NULL")
		}
		c, ok := javaCompare(high.val, low.val)
		if !ok || c < 0 {
			return nil, errorAt(pos, "BETWEEN's lower bound must not exceed its upper bound")
		}
	}
	if negated {
		below, err := relation(opLt, v, low, pos)
		if err != nil {
			return nil, err
		}
		above, err := relation(opGt, v, high, pos)
		if err != nil {
			return nil, err
		}
		return withDepth(&node{op: opOr, boolean: true, kids: []*node{below, above}}, pos)
	}
	atLeast, err := relation(opGe, v, low, pos)
	if err != nil {
		return nil, err
	}
	atMost, err := relation(opLe, v, high, pos)
	if err != nil {
		return nil, err
	}
	return withDepth(&node{op: opAnd, boolean: true, kids: []*node{atLeast, atMost}}, pos)
}

func kindName(k kind) string {
	switch k {
	case kindNull:
		return "NULL"
	case kindBool:
		return "boolean"
	}
	return "string"
}
