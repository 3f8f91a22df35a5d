package sql92

import (
	"errors"
	"strings"
	"testing"
)

type props map[string]string

func (p props) get(name string) (string, bool) {
	v, ok := p[name]
	return v, ok
}

func resultName(v value) string {
	switch {
	case v.kind == kindErr:
		return "error"
	case v.kind == kindNull:
		return "null"
	case v.kind == kindBool && v.b:
		return "true"
	case v.kind == kindBool:
		return "false"
	}
	return "non-boolean"
}

// The cases follow RocketMQ 4.9's filter/src/test ExpressionTest and ParserTest, and the
// classes they exercise, with values of our own.
func TestEvaluate(t *testing.T) {
	tests := []struct {
		expr  string
		props props
		want  string // true, false, null (unknown) or error (an exception in RocketMQ)
	}{
		// AND / OR chains over numbers held as strings.
		{"a=3 and b<>4 And c>5 AND d<=4", props{"a": "3", "b": "7", "c": "8", "d": "0"}, "true"},
		{"a=3 and b<>4 And c>5 AND d<=4", props{"a": "2", "b": "7", "c": "8", "d": "0"}, "false"},
		{"a=3 or b<>4 Or c>5 OR d<=4", props{"a": "3"}, "true"},
		{"a=3 or b<>4 Or c>5 OR d<=4", props{"a": "9", "b": "1"}, "true"},
		{"a=3 or b<>4 Or c>5 OR d<=4", props{"a": "9", "b": "4", "c": "6"}, "true"},
		{"a=3 or b<>4 Or c>5 OR d<=4", props{"a": "9", "b": "4", "c": "1", "d": "4"}, "true"},
		{"a=3 or b<>4 Or c>5 OR d<=4", props{"a": "9", "b": "4", "c": "1", "d": "12"}, "false"},
		{"a=3 or b<>4 Or c>5 OR d<=4", props{"a": "9", "b": "4"}, "null"},
		// Three-valued logic: a missing property is unknown; only true matches.
		{"a = 1", props{}, "null"},
		{"NOT (a = 1)", props{}, "null"},
		{"a = 1 AND b = 2", props{"b": "3"}, "false"},
		{"a = 1 AND b = 2", props{"b": "2"}, "null"},
		{"a = 1 OR b = 2", props{"b": "2"}, "true"},
		{"a = 1 OR b = 2", props{"b": "3"}, "null"},
		{"a > 1", props{}, "null"},
		{"a IN ('x')", props{}, "null"},
		{"a NOT IN ('x')", props{}, "null"},
		{"TRUE", props{}, "true"},
		{"NULL", props{}, "null"},
		{"NOT NULL", props{}, "null"},
		{"FALSE OR NULL", props{}, "null"},
		{"TRUE AND NULL", props{}, "null"},
		// Equality's asymmetry (doCreateEqual): a missing right side is false, not unknown.
		{"a = b", props{"a": "1"}, "false"},
		{"a <> b", props{"a": "1"}, "true"},
		{"a = b", props{"b": "1"}, "null"},
		{"a = b", props{}, "true"},
		{"'x' <> a", props{}, "true"},
		// Strings: equality is exact; both quotes doubled inside a literal.
		{"a is not null and a='hello'", props{"a": "hello"}, "true"},
		{"a is not null and a='hello'", props{}, "false"},
		{"a is not null and a='hello'", props{"a": "Hello"}, "false"},
		{"a is null OR a='hello'", props{}, "true"},
		{"a is null OR a='hello'", props{"a": "hello"}, "true"},
		{"a is null OR a='hello'", props{"a": "bye"}, "false"},
		{"TAGS is not null and TAGS='''''tag'''''", props{"TAGS": "''tag''"}, "true"},
		{"TAGS = 'it''s'", props{"TAGS": "it's"}, "true"},
		{"TAGS = ''", props{"TAGS": ""}, "true"},
		{"a = 'ünï'", props{"a": "ünï"}, "true"},
		{"a=b", props{"a": "3.14", "b": "3.14"}, "true"},
		{"a<>b", props{"a": "3.14", "b": "3.14"}, "false"},
		{"a<>b", props{"a": "3.14", "b": "3.141"}, "true"},
		{"a = '1'", props{"a": "1.0"}, "false"},
		// Numbers: the literal's type decides how the property parses (Integer, Long, Double).
		{"a > 3.14", props{"a": "3.1415"}, "true"},
		{"a > 3.1E10", props{"a": "31415000000"}, "true"},
		{"a > 3.1E10", props{"a": "3.1415E10"}, "true"},
		{"a = 3", props{"a": "3"}, "true"},
		{"a = 3", props{"a": "+3"}, "true"},
		{"a = 3", props{"a": "03"}, "true"},
		{"a = 3", props{"a": "3.0"}, "error"},
		{"a = 3", props{"a": "abc"}, "error"},
		{"a <> 3", props{"a": "abc"}, "error"},
		{"a = 3 OR b = 'x'", props{"a": "abc", "b": "x"}, "error"},
		{"b = 'x' OR a = 3", props{"a": "abc", "b": "x"}, "true"},
		{"a > 5", props{"a": "3000000000"}, "error"},
		{"a > 5L", props{"a": "3000000000"}, "error"},
		{"a < 3000000000", props{"a": "2999999999"}, "true"},
		{"a < 3000000000", props{"a": "9223372036854775808"}, "error"},
		{"a > -5", props{"a": "-4"}, "true"},
		{"a > - -5", props{"a": "4"}, "false"},
		{"a = 3.0", props{"a": "3"}, "true"},
		{"a = 3.5", props{"a": " 3.5 "}, "true"},
		{"a = 3.5", props{"a": "3.5d"}, "true"},
		{"a = 3.5", props{"a": "0x1.cp1"}, "true"},
		{"a = 3.5", props{"a": "3_5"}, "error"},
		{"a > 3.5", props{"a": "Infinity"}, "true"},
		{"a > 3.5", props{"a": "inf"}, "error"},
		{"a > 3.5", props{"a": "NaN"}, "true"},
		{"a = 3.5", props{"a": "NaN"}, "false"},
		{"a > b", props{"a": "10", "b": "20"}, "false"},
		{"a > b", props{"a": "20", "b": "10"}, "true"},
		{"a > b", props{"a": "20", "b": "x"}, "error"},
		{"a >= b", props{"a": "2.5", "b": "2.50"}, "true"},
		{"-a > 1", props{"a": "5"}, "null"},
		{"3 = 3.0", props{}, "true"},
		{"3 < 3000000000", props{}, "true"},
		{"2 = '2'", props{}, "true"},
		{"2 = 'two'", props{}, "error"},
		// Booleans: a property equals TRUE when it reads "true" in any case, else it equals FALSE.
		{"a=TRUE OR b=FALSE", props{"a": "true", "b": "false"}, "true"},
		{"a=TRUE OR b=FALSE", props{"a": "false", "b": "true"}, "false"},
		{"a = TRUE", props{"a": "TrUe"}, "true"},
		{"a = FALSE", props{"a": "banana"}, "true"},
		{"TRUE = a", props{"a": "true"}, "error"},
		{"TRUE = FALSE", props{}, "false"},
		{"1 = TRUE", props{}, "false"},
		{"(a = 1) = TRUE", props{"a": "1"}, "true"},
		{"(a = 1) = 'true'", props{"a": "1"}, "error"},
		{"a", props{"a": "true"}, "false"},
		{"a", props{}, "null"},
		{"NOT a", props{"a": "true"}, "true"},
		// NOT binds tighter than comparisons: NOT a = 1 is (NOT a) = 1, never true.
		{"NOT a = 1", props{"a": "1"}, "false"},
		{"NOT (a = 1)", props{"a": "2"}, "true"},
		{"NOT a IS NULL", props{}, "true"},
		// Precedence: AND before OR; parentheses override.
		{"a = 1 OR b = 1 AND c = 1", props{"a": "1", "b": "0", "c": "0"}, "true"},
		{"(a = 1 OR b = 1) AND c = 1", props{"a": "1", "b": "0", "c": "0"}, "false"},
		{"NOT a = 1 OR b = 1", props{"a": "1", "b": "1"}, "true"},
		// IN / NOT IN compare strings exactly.
		{"a in ('3', '4', '5')", props{"a": "4"}, "true"},
		{"a in ('3', '4', '5')", props{"a": "8"}, "false"},
		{"a in ('3', '4', '5')", props{"a": "4.0"}, "false"},
		{"a not in ('3', '4', '5')", props{"a": "8"}, "true"},
		{"a not in ('3', '4', '5')", props{"a": "3"}, "false"},
		{"(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))", props{"a": "4", "b": "5"}, "true"},
		{"a IN ('a','b','c','d','e','f','g','h','i','j')", props{"a": "j"}, "true"},
		{"a IN ('a','b','c','d','e','f','g','h','i','j')", props{"a": "k"}, "false"},
		{"a NOT IN ('a','b','c','d','e','f','g','h','i','j')", props{"a": "k"}, "true"},
		{"+a IN ('x')", props{"a": "x"}, "true"},
		// BETWEEN is inclusive; NOT BETWEEN is its complement; bad numbers are errors.
		{"a between 2 and 10", props{"a": "2"}, "true"},
		{"a between 2 and 10", props{"a": "10"}, "true"},
		{"a between 2 and 10", props{"a": "1"}, "false"},
		{"a between 2 and 10", props{"a": "11"}, "false"},
		{"a not between 2 and 10", props{"a": "11"}, "true"},
		{"a not between 2 and 10", props{"a": "5"}, "false"},
		{"a between 2 and 10", props{}, "null"},
		{"a between 0 and 100", props{"a": "abc"}, "error"},
		{"key is not null and key between 0 and 100", props{"key": "con"}, "error"},
		{"a between up and low", props{"a": "3.14", "up": "up", "low": "low"}, "error"},
		{"a between up and low", props{"a": "3.14"}, "null"},
		{"a between 1 and 2.5", props{"a": "2"}, "true"},
		{"a between 1 and 2.5", props{"a": "2.5"}, "error"}, // a >= 1 parses "2.5" as an int
		{"a between 1.0 and 2.5", props{"a": "2.5"}, "true"},
		{"(a between 2 and 10) AND (b not between 6 and 9)", props{"a": "3", "b": "10"}, "true"},
		{"a BETWEEN 1 AND 2 AND b = 'x'", props{"a": "1", "b": "x"}, "true"},
		// IS NULL, IS NOT NULL, chained on conditions.
		{"a is null", props{"abc": "2"}, "true"},
		{"a is null", props{"a": "2"}, "false"},
		{"a is not null", props{"a": "2"}, "true"},
		{"a is not null", props{"abc": "2"}, "false"},
		{"a > 1 IS NULL", props{}, "true"},
		{"NULL IS NULL", props{}, "true"},
		{"a = ''", props{"a": ""}, "true"},
		// Keywords in any case; comments; identifiers with _ $ and digits.
		{"a iS NoT nUlL aNd a NOT  between 1 AnD 2", props{"a": "3"}, "true"},
		{"/* who */ a = 1 -- trailing remark\n", props{"a": "1"}, "true"},
		{"$x_1 = 'y'", props{"$x_1": "y"}, "true"},
		{"now >= 5", props{"now": "9"}, "true"},
		{"a=--1", props{"a": "1"}, "true"},
		{"a=- -1", props{"a": "1"}, "true"},
		{"a = 01.5", props{"a": "1.5"}, "true"},
		{"a = 5.", props{"a": "5"}, "true"},
		{"a = .5e1", props{"a": "5"}, "true"},
	}
	for _, tt := range tests {
		e, err := Compile(tt.expr)
		if err != nil {
			t.Errorf("Compile(%q): %v", tt.expr, err)
			continue
		}
		if got := resultName(e.root.eval(tt.props.get)); got != tt.want {
			t.Errorf("%q with %v = %s, want %s", tt.expr, tt.props, got, tt.want)
		}
		if got, want := e.Match(tt.props.get), tt.want == "true"; got != want {
			t.Errorf("%q with %v: Match = %v, want %v", tt.expr, tt.props, got, want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		expr   string
		offset int
		text   string // part of the message
	}{
		{"", 0, "empty"},
		{" \t\n", 0, "empty"},
		{"(a = 1", 6, "expected ')'"},
		{"a = 1)", 5, "end of the expression"},
		{"((a = 1)", 8, "expected ')'"},
		{"a = 1 b", 6, "end of the expression"},
		{"a = 1;", 5, "unexpected character"},
		{"a and between 2 and 10", 6, "expected a property"},
		{" a between 10 and 0", 3, "lower bound"},
		{"a between NULL and 1", 2, "NULL"},
		{"a between 'x' and 'y'", 2, "string literal"},
		{"a > 100000000000000000000000", 4, "long range"},
		{"a > 9223372036854775808", 4, "long range"},
		{"a > 1e400", 4, "largest double"},
		{"a > 0.0", 4, "zero"},
		{"a > 1e-400", 4, "zero"},
		{"a = 'abc", 4, "unterminated string"},
		{"a = 1 /* x", 6, "unterminated /*"},
		{"a == 1", 3, "expected a property"},
		{"a != 1", 2, "unexpected character"},
		{"a = 1 &&  b = 2", 6, "unexpected character"},
		{"a > 'x'", 2, "string literal"},
		{"a > TRUE", 2, "boolean literal"},
		{"a > NULL", 2, "NULL literal"},
		{"(a = 1) > 2", 8, "condition"},
		{"a = NULL", 2, "IS NULL"},
		{"NULL = a", 5, "IS NULL"},
		{"TRUE = 1", 5, "boolean literal"},
		{"1", 0, "boolean"},
		{"'x' AND a = 1", 0, "boolean"},
		{"a = 1 AND 2", 10, "boolean"},
		{"NOT 1", 4, "boolean"},
		{"-a AND b", 0, "boolean"},
		{"a IN ()", 6, "string literal in the IN list"},
		{"a IN (1, 2)", 6, "string literal in the IN list"},
		{"a IN 'x'", 5, "expected '('"},
		{"'a' IN ('a')", 4, "property on its left"},
		{"NOT a IN ('x')", 6, "property on its left"},
		{"a IS 1", 5, "expected NULL"},
		{"a BETWEEN 1 2", 12, "expected AND"},
		{"a = 0L", 5, "end of the expression"},
		{"a = 007", 5, "end of the expression"},
		{"a = 1 -- no line end", 6, "end of the expression"},
		{"a = .", 4, "unexpected character '.'"},
		{"a.b = 1", 1, "unexpected character '.'"},
		{"é = 1", 0, `unexpected character "é"`},
		{"a = 1 NOT", 6, "end of the expression"},
		{strings.Repeat("(", MaxDepth+1) + "a = 1" + strings.Repeat(")", MaxDepth+1), MaxDepth, "deeper"},
		{strings.Repeat("NOT ", MaxDepth+1) + "a", 4 * MaxDepth, "deeper"},
		{"a" + strings.Repeat(" = TRUE", MaxDepth+1), -1, "deeper"},
		{"a = '" + strings.Repeat("x", MaxExpressionBytes) + "'", MaxExpressionBytes, "longer"},
	}
	for _, tt := range tests {
		_, err := Compile(tt.expr)
		if err == nil {
			t.Errorf("Compile(%.40q) succeeded, want an error", tt.expr)
			continue
		}
		var se *syntaxError
		if !errors.As(err, &se) {
			t.Errorf("Compile(%.40q) error %T, want *syntaxError", tt.expr, err)
			continue
		}
		if tt.offset >= 0 && se.offset != tt.offset {
			t.Errorf("Compile(%.40q): %v; offset %d, want %d", tt.expr, err, se.offset, tt.offset)
		}
		if !strings.Contains(err.Error(), tt.text) {
			t.Errorf("Compile(%.40q): %q does not mention %q", tt.expr, err, tt.text)
		}
	}
}

func TestBoundsAdmitLegalExpressions(t *testing.T) {
	deep := strings.Repeat("(", MaxDepth-1) + "a = 1" + strings.Repeat(")", MaxDepth-1)
	long := "a IN ('x'" + strings.Repeat(",'x'", (MaxExpressionBytes-len("a IN ('x')"))/4) + ")"
	clauses := "a = 1" + strings.Repeat(" OR a = 1", (MaxExpressionBytes-5)/10)
	for _, s := range []string{deep, long, clauses} {
		if len(s) > MaxExpressionBytes {
			t.Fatalf("test expression of %d bytes exceeds the bound", len(s))
		}
		e, err := Compile(s)
		if err != nil {
			t.Errorf("Compile(%.40q...): %v", s, err)
			continue
		}
		if !e.Match(props{"a": "1", "b": "x"}.get) && s != long {
			t.Errorf("%.40q... does not match a=1", s)
		}
	}
}

func TestStringIsSource(t *testing.T) {
	const src = "  a = 'x''y'  /* c */ "
	e, err := Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	if e.String() != src {
		t.Errorf("String() = %q, want %q", e.String(), src)
	}
}

func TestErrorQuotesAreBounded(t *testing.T) {
	_, err := Compile("a = 1 " + strings.Repeat("z", 1000))
	if err == nil {
		t.Fatal("trailing identifier accepted")
	}
	if len(err.Error()) > 200 {
		t.Errorf("error of %d bytes quotes too much: %.80q", len(err.Error()), err)
	}
}

func TestMatchIsSafeForConcurrentUse(t *testing.T) {
	e, err := Compile("a BETWEEN 1 AND 10 AND TAGS IN ('x', 'y')")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	for g := range 4 {
		go func() {
			ok := true
			for i := range 1000 {
				tags := "x"
				if (i+g)%2 == 1 {
					tags = "z"
				}
				got := e.Match(props{"a": "5", "TAGS": tags}.get)
				ok = ok && got == (tags == "x")
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Error("a concurrent Match gave a wrong result")
		}
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	msg := props{"a": "7", "b": "2.5", "TAGS": "TagB", "region": "eu"}
	for _, expr := range []string{
		"a > 5 AND b <= 3.0 AND TAGS IN ('TagA', 'TagB')",
		"a BETWEEN 1 AND 10 OR region = 'us'",
		"region NOT IN ('a','b','c','d','e','f','g','h','i') AND missing IS NULL",
		"a = 'x' OR b > 5",
	} {
		e, err := Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { e.Match(msg.get) }); n != 0 {
			t.Errorf("%q: %v allocations per Match", expr, n)
		}
	}
}
