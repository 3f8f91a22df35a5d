package protocol

import (
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mqgo/mq/internal/protocol/internal/headergen"
	"github.com/mqgo/mq/remoting"
)

// TestHeadersGenUpToDate fails when a header's tags changed without go generate.
func TestHeadersGenUpToDate(t *testing.T) {
	want, err := headergen.Generate(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(headergen.OutputFile)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is stale, run go generate ./internal/protocol/ (-want +got):\n%s", headergen.OutputFile, diff)
	}
}

// TestEveryHeaderIsGolden keeps the golden file complete: a new header type must get an entry
// in goldenHeaders.
func TestEveryHeaderIsGolden(t *testing.T) {
	_, headers, err := headergen.Parse(".")
	if err != nil {
		t.Fatal(err)
	}
	var generated, listed []string
	for _, h := range headers {
		generated = append(generated, h.Name)
	}
	for _, g := range goldenHeaders {
		if name := reflect.TypeOf(g.make()).Elem().Name(); !slices.Contains(listed, name) {
			listed = append(listed, name)
		}
	}
	slices.Sort(generated)
	slices.Sort(listed)
	if diff := cmp.Diff(generated, listed); diff != "" {
		t.Errorf("header types (-generated +in goldenHeaders):\n%s", diff)
	}
}

// ExtFieldsCap is what EncodeHeader sizes the map by: a header with every field set writes
// exactly that many keys, and one with none set no more.
func TestExtFieldsCapCountsEveryKey(t *testing.T) {
	for _, g := range goldenHeaders {
		h := g.make()
		sized, ok := h.(remoting.SizedHeader)
		if !ok {
			t.Errorf("%s is not a remoting.SizedHeader", g.name)
			continue
		}
		if n := len(remoting.EncodeHeader(h)); n > sized.ExtFieldsCap() {
			t.Errorf("%s zero value: %d keys, ExtFieldsCap %d", g.name, n, sized.ExtFieldsCap())
		}
		v := reflect.ValueOf(h).Elem()
		for i := range v.NumField() {
			switch f := v.Field(i); f.Kind() {
			case reflect.String:
				f.SetString("v")
			case reflect.Int32, reflect.Int64:
				f.SetInt(1)
			case reflect.Bool:
				f.SetBool(true)
			}
		}
		if n := len(remoting.EncodeHeader(h)); n != sized.ExtFieldsCap() {
			t.Errorf("%s with every field set: %d keys, ExtFieldsCap %d", g.name, n, sized.ExtFieldsCap())
		}
	}
}

// AppendBinary writes what Encode writes: for every header, with its fields at zero, all set,
// and at -1 (where OmitNeg leaves integers out), a request carrying the header as Fields
// decodes, from its ROCKETMQ frame, to the map Encode fills, and the JSON encoder of such a
// request writes the same.
func TestAppendBinaryMatchesEncode(t *testing.T) {
	fill := func(h remoting.Header, s string, n int64, b bool) {
		v := reflect.ValueOf(h).Elem()
		for i := range v.NumField() {
			switch f := v.Field(i); f.Kind() {
			case reflect.String:
				f.SetString(s)
			case reflect.Int32, reflect.Int64:
				f.SetInt(n)
			case reflect.Bool:
				f.SetBool(b)
			}
		}
	}
	for _, g := range goldenHeaders {
		for _, set := range []struct {
			s string
			n int64
			b bool
		}{{"", 0, false}, {"v\x01w\x02", 1 << 40, true}, {"x", -1, false}} {
			h := g.make()
			fill(h, set.s, set.n, set.b)
			bh, ok := h.(remoting.BinaryHeader)
			if !ok {
				t.Fatalf("%s is not a remoting.BinaryHeader", g.name)
			}
			want := remoting.EncodeHeader(h)
			for _, ser := range []remoting.SerializeType{remoting.SerializeRocketMQ, remoting.SerializeJSON} {
				req := remoting.NewRequestFields(10, bh, []byte("body"))
				req.Serialize = ser
				got, err := remoting.DecodeFrame(remoting.AppendFrame(nil, req)[4:])
				if err != nil {
					t.Fatalf("%s %v: %v", g.name, ser, err)
				}
				if diff := cmp.Diff(want, got.ExtFields, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s (%q, %d, %v) serialized %v (-Encode +AppendBinary):\n%s", g.name, set.s, set.n, set.b, ser, diff)
				}
			}
		}
	}
}
