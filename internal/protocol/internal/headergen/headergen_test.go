package headergen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writePkg(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "h.go"), []byte("package p\n\n"+src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestParseReadsTagsAndDirective(t *testing.T) {
	dir := writePkg(t, `
type Body struct { X int `+"`json:\"x\"`"+` }

type Send struct {
	Group string `+"`ext:\"group,required\" v2:\"a\"`"+`
	Max   int32  `+"`ext:\"max,omitneg\" v2:\"b\"`"+`
	Trace bool   `+"`ext:\"TRACE,nonfalse\" v2:\"c\"`"+`
	Queue int64  `+"`ext:\"queueId,omitempty,alias=QueueId\" v2:\"d\"`"+`
}

// SendV2 is Send under short keys.
//
//headergen:keys v2
type SendV2 Send

type SendAlias = Send
`)
	pkg, headers, err := Parse(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Header{
		{Name: "Send", Fields: []Field{
			{Name: "Group", Type: "string", Key: "group", Required: true},
			{Name: "Max", Type: "int32", Key: "max", OmitNeg: true},
			{Name: "Trace", Type: "bool", Key: "TRACE", NonFalse: true},
			{Name: "Queue", Type: "int64", Key: "queueId", OmitEmpty: true, Alias: "QueueId"},
		}},
		{Name: "SendV2", Fields: []Field{
			{Name: "Group", Type: "string", Key: "a", Required: true},
			{Name: "Max", Type: "int32", Key: "b", OmitNeg: true},
			{Name: "Trace", Type: "bool", Key: "c", NonFalse: true},
			{Name: "Queue", Type: "int64", Key: "d", OmitEmpty: true, Alias: "QueueId"},
		}},
	}
	if pkg != "p" {
		t.Errorf("package %q", pkg)
	}
	if diff := cmp.Diff(want, headers); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	src, err := Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"func (h *SendV2) Decode(ext map[string]string) error {",
		`ext = withAliases(ext, "d", "QueueId")`,
		"if h.Max >= 0 {",
		`h.Trace = nonFalse(r.String("TRACE", false))`,
		`h.Group = r.String("group", true)`,
		"func (h *SendV2) ExtFieldsCap() int { return 4 }",
	} {
		if !strings.Contains(string(src), line) {
			t.Errorf("generated code lacks %q:\n%s", line, src)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	tag := func(s string) string { return "`" + s + "`" }
	cases := []struct{ name, src, want string }{
		{"untagged field", "type H struct { A string " + tag(`ext:"a"`) + "\n B string }", "no ext tag"},
		{"field type", "type H struct { A int " + tag(`ext:"a"`) + " }", "type must be"},
		{"unknown option", "type H struct { A string " + tag(`ext:"a,requried"`) + " }", `unknown option "requried"`},
		{"empty key", "type H struct { A string " + tag(`ext:",required"`) + " }", "no key"},
		{"omitneg string", "type H struct { A string " + tag(`ext:"a,omitneg"`) + " }", "omitneg needs an integer"},
		{"nonfalse int", "type H struct { A int32 " + tag(`ext:"a,nonfalse"`) + " }", "nonfalse needs a bool"},
		{"required omitted", "type H struct { A string " + tag(`ext:"a,required,omitempty"`) + " }", "always written"},
		{"duplicate key", "type H struct { A string " + tag(`ext:"a"`) + "\n B string " + tag(`ext:"b,alias=a"`) + " }", `key "a" used twice`},
		{"embedded", "type E struct{}\ntype H struct { E\n A string " + tag(`ext:"a"`) + " }", "embedded"},
		{"identical codecs", "type H struct { A string " + tag(`ext:"a"`) + " }\ntype G struct { B string " + tag(`ext:"a"`) + " }", "H and G have identical codecs"},
		{"defined without keys", "type H struct { A string " + tag(`ext:"a" v2:"b"`) + " }\ntype H2 H", "H2 is defined over the header H"},
		{"keys on a non-header", "type B struct { A string }\n//headergen:keys v2\ntype B2 B", "not defined over a header"},
		{"missing second key", "type H struct { A string " + tag(`ext:"a"`) + " }\n//headergen:keys v2\ntype H2 H", "no key in its v2 tag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Parse(writePkg(t, c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want one containing %q", err, c.want)
			}
		})
	}
}
