package route

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecodeTopicRouteData: no panic on any input, and whatever decodes re-encodes to a body that
// decodes to the same route.
func FuzzDecodeTopicRouteData(f *testing.F) {
	f.Add([]byte(goldenRoute))
	f.Add([]byte(`{"brokerDatas":[{"brokerAddrs":{0:"a:1",1:"b:1"},"brokerName":"b","cluster":"c"}],"queueDatas":[]}`))
	f.Add([]byte(`{"queueDatas":[{"topicSysFlag":1}],"filterServerTable":{"a":["b"]}}`))
	f.Add([]byte(`{0:{1:[2,{3:4}]}}`))
	f.Add([]byte(`{"orderTopicConf":"a:1","brokerDatas":[{}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeTopicRouteData(data)
		if err != nil {
			return
		}
		enc := r.Encode()
		back, err := DecodeTopicRouteData(enc)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", enc, err)
		}
		if diff := cmp.Diff(r, back); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
		if !bytes.Equal(enc, back.Encode()) {
			t.Fatalf("encoding not stable")
		}
	})
}

// FuzzDecodeRegisterBrokerBody: no panic on any input in either form.
func FuzzDecodeRegisterBrokerBody(f *testing.F) {
	f.Add(exampleBody().Encode(false), false)
	f.Add(exampleBody().Encode(true), true)
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{}}}}`), false)
	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		b, err := DecodeRegisterBrokerBody(data, compressed)
		if err != nil {
			return
		}
		if _, err := DecodeRegisterBrokerBody(b.Encode(compressed), compressed); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

// FuzzQuoteNumericKeys: the rewrite only wraps bare numeric object keys in quotes (every other
// byte is copied in place), leaves valid JSON as it is (the same slice), gives back exactly the
// valid JSON a fastjson writer started from when its numeric keys are unquoted, and is
// idempotent.
func FuzzQuoteNumericKeys(f *testing.F) {
	f.Add([]byte(`{0:"a",1:"b"}`))
	f.Add([]byte(`{"s":"\\\"{0:1}"}`))
	f.Add([]byte(`{"0":"a:1","-1":{"2":[{"3e5":1,"x":"4"}]}, "5" :[0,{"6":{}}]}`))
	f.Add([]byte(`[{"1.5":"\u0031","\u0032":2},"7:8",{"":0,"-":1}]`))
	f.Add([]byte(`{"a":[0,1,-2.5e3],"7":[8,{"9":[10]}],"1e-5":{"-0.5E+2":null}}`))
	f.Add([]byte(`{1"x"}`))
	f.Add([]byte(goldenRoute))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		out := quoteNumericKeys(data)
		if !bytes.Equal(data, in) {
			t.Fatalf("input modified: %q, was %q", data, in)
		}
		checkOnlyKeysQuoted(t, in, out)
		if again := quoteNumericKeys(bytes.Clone(out)); !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, out, again)
		}
		if !json.Valid(in) {
			return
		}
		if !bytes.Equal(out, in) || (len(in) > 0 && &out[0] != &data[0]) {
			t.Fatalf("valid JSON rewritten: %q -> %q", in, out)
		}
		bare := unquoteNumericKeys(t, in)
		if got := quoteNumericKeys(bare); !bytes.Equal(got, in) {
			t.Fatalf("keys of %q unquoted to %q, quoted back to %q", in, bare, got)
		}
	})
}

// checkOnlyKeysQuoted fails unless out is in with some maximal runs of number bytes, each
// starting with '-' or a digit, wrapped in quotes.
func checkOnlyKeysQuoted(t *testing.T, in, out []byte) {
	t.Helper()
	i, o := 0, 0
	for i < len(in) && o < len(out) {
		if in[i] == out[o] {
			i, o = i+1, o+1
			continue
		}
		// An inserted quote: in[i] cannot be '"', so it is the opening one.
		j := i
		for j < len(in) && numberByte(in[j]) {
			j++
		}
		run := in[i:j]
		if out[o] != '"' || len(run) == 0 || !(run[0] == '-' || (run[0] >= '0' && run[0] <= '9')) ||
			!bytes.HasPrefix(out[o+1:], run) || o+1+len(run) >= len(out) || out[o+1+len(run)] != '"' {
			t.Fatalf("%q -> %q: byte %d of the output (%q) is neither copied nor a quoted number", in, out, o, out[o:])
		}
		i, o = j, o+len(run)+2
	}
	if i != len(in) || o != len(out) {
		t.Fatalf("%q -> %q: lengths do not line up (input at %d, output at %d)", in, out, i, o)
	}
}

// unquoteNumericKeys writes valid JSON doc as fastjson writes Long keys: every object key that
// is a run of number bytes starting with '-' or a digit, and written without escapes, loses its
// quotes.
func unquoteNumericKeys(t *testing.T, doc []byte) []byte {
	t.Helper()
	type container struct{ object, wantKey bool }
	var (
		stack []container
		drop  = map[int]bool{} // offsets of the quotes to remove
	)
	valueDone := func() { // a value of the innermost container ended
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("token of valid JSON %q: %v", doc, err)
		}
		end := int(dec.InputOffset())
		switch d, _ := tok.(json.Delim); {
		case d == '}' || d == ']':
			stack = stack[:len(stack)-1]
			valueDone()
		case len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].wantKey:
			stack[len(stack)-1].wantKey = false
			key := tok.(string)
			raw := end - len(key) - 2
			if numericKey(key) && raw >= 0 && string(doc[raw:end]) == `"`+key+`"` {
				drop[raw], drop[end-1] = true, true
			}
		case d == '{' || d == '[':
			stack = append(stack, container{object: d == '{', wantKey: true})
		default:
			valueDone()
		}
	}
	out := make([]byte, 0, len(doc))
	for i, c := range doc {
		if !drop[i] {
			out = append(out, c)
		}
	}
	return out
}

func numericKey(k string) bool {
	if k == "" || !(k[0] == '-' || (k[0] >= '0' && k[0] <= '9')) {
		return false
	}
	for i := range len(k) {
		if !numberByte(k[i]) {
			return false
		}
	}
	return true
}

// numberByte is what a JSON number may contain, spelled out here rather than taken from the
// code under test.
func numberByte(c byte) bool { return strings.IndexByte("0123456789-+.eE", c) >= 0 }
