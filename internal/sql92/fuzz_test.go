package sql92

import "testing"

var fuzzSeeds = []string{
	"a=3 and b<>4 And c>5 AND d<=4",
	"a in ('3', '4', '5') or b not in ('x')",
	"(a between 2 and 10) AND (b not between 6 and 9)",
	"a is null OR a is not null",
	"TAGS = '''x''' AND NOT (n > -1.5e3)",
	"a = TRUE OR b = FALSE OR NULL IS NULL",
	"/* c */ a = 1 -- r\n",
	"a=--1",
	"((a)) = (b)",
	"a > 0x1",
}

// fuzzMessages cover missing, numeric, boolean-looking and odd property values.
var fuzzMessages = []props{
	{},
	{"a": "3", "b": "4", "c": "6", "d": "1", "TAGS": "x", "n": "-2"},
	{"a": "true", "b": "NaN", "c": "1e400", "d": " 7 ", "TAGS": "'x'", "n": "abc"},
	{"a": "", "b": "-0.0", "c": "9223372036854775808", "d": "0x1p3", "TAGS": "", "n": "2147483648"},
}

func FuzzCompile(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Compile(s)
		if err != nil {
			if e != nil {
				t.Fatalf("Compile(%q) returned both an expression and %v", s, err)
			}
			return
		}
		for _, m := range fuzzMessages {
			e.Match(m.get)
		}
		again, err := Compile(e.String())
		if err != nil {
			t.Fatalf("Compile(%q).String() does not compile: %v", s, err)
		}
		for _, m := range fuzzMessages {
			if again.Match(m.get) != e.Match(m.get) {
				t.Fatalf("recompiled %q matches %v differently", s, m)
			}
		}
	})
}

// FuzzMatch varies the property values under fixed expressions that exercise every numeric
// conversion, and checks the identities RocketMQ's semantics guarantee whatever the value.
func FuzzMatch(f *testing.F) {
	for _, v := range []string{"3", "-2147483649", "1.5", "NaN", " +7d", "0x1.8p1", "true", "", "1_0"} {
		f.Add(v)
	}
	exprs := map[string]*Expr{}
	for _, s := range []string{
		"v = 3", "v <> 3", "v > 3000000000", "v <= 1.5", "v = TRUE", "v IN ('3', 'true')",
		"v NOT IN ('3', 'true')", "v BETWEEN 1 AND 5", "v NOT BETWEEN 1 AND 5", "v > w", "v = w",
	} {
		e, err := Compile(s)
		if err != nil {
			f.Fatal(err)
		}
		exprs[s] = e
	}
	f.Fuzz(func(t *testing.T, v string) {
		m := props{"v": v, "w": v}
		for s, e := range exprs {
			e.Match(m.get)
			if s == "v = w" && !e.Match(m.get) {
				t.Fatalf("%q with v = w = %q does not match", s, v)
			}
		}
		in, notIn := exprs["v IN ('3', 'true')"].Match(m.get), exprs["v NOT IN ('3', 'true')"].Match(m.get)
		if in == notIn {
			t.Fatalf("IN and NOT IN agree (%v) on a set value %q", in, v)
		}
		eq, ne := exprs["v = 3"].root.eval(m.get), exprs["v <> 3"].root.eval(m.get)
		if eq.kind != ne.kind || (eq.kind == kindBool && eq.b == ne.b) {
			t.Fatalf("= and <> on %q: %s and %s", v, resultName(eq), resultName(ne))
		}
	})
}
