package remoting

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var cmpCommand = cmp.Options{cmpopts.IgnoreFields(Command{}, "OnWritten"), cmp.AllowUnexported(Command{})}

func sampleCommand(st SerializeType) *Command {
	return &Command{
		Code: SendMessage, Language: LanguageGo, Version: 317, Opaque: 7, Flag: 0,
		Remark:    "héllo \"quoted\" \\ tab\t",
		ExtFields: map[string]string{"topic": "T", "properties": "TAGS\x01a\x02UNIQ_KEY\x01C0A8\x02", "empty": ""},
		Body:      []byte("body bytes"),
		Serialize: st,
	}
}

func TestRoundTripBothCodecs(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		in := sampleCommand(st)
		frame := AppendFrame(nil, in)
		f, n, err := SplitFrame(frame, DefaultMaxFrameBytes)
		if err != nil || n != len(frame) {
			t.Fatalf("serialize %d: split: n=%d err=%v", st, n, err)
		}
		out, err := DecodeFrame(f)
		if err != nil {
			t.Fatalf("serialize %d: decode: %v", st, err)
		}
		if diff := cmp.Diff(in, out, cmpCommand); diff != "" {
			t.Errorf("serialize %d: round trip (-want +got):\n%s", st, diff)
		}
	}
}

// The example frame of docs/protocol.md §1.5, byte for byte.
func TestBinaryHeaderMatchesSpecExample(t *testing.T) {
	raw, _ := hex.DecodeString(strings.ReplaceAll(
		"00000022 0100001e 000b 09 013d 00000002 00000000 00000001 72 00000008 00016b0000000176", " ", ""))
	f, n, err := SplitFrame(raw, 0)
	if err != nil || n != len(raw) {
		t.Fatalf("split: n=%d err=%v", n, err)
	}
	c, err := DecodeFrame(f)
	if err != nil {
		t.Fatal(err)
	}
	want := &Command{Code: 11, Language: LanguageGo, Version: 317, Opaque: 2, Remark: "r",
		ExtFields: map[string]string{"k": "v"}, Serialize: SerializeRocketMQ}
	if diff := cmp.Diff(want, c, cmpCommand); diff != "" {
		t.Fatalf("decode (-want +got):\n%s", diff)
	}
	if got := AppendFrame(nil, c); !bytes.Equal(got, raw) {
		t.Fatalf("re-encode:\n got %x\nwant %x", got, raw)
	}
}

// A header as the official Go client writes it (docs/protocol.md §1.2), plus what Java servers add.
func TestJSONHeaderFromOfficialClient(t *testing.T) {
	hdr := `{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}`
	c := &Command{}
	if err := decodeJSONHeader([]byte(hdr), c, 0); err != nil {
		t.Fatal(err)
	}
	want := &Command{Code: 105, Language: LanguageGo, Version: 317, Opaque: 1,
		ExtFields: map[string]string{"topic": "T"}}
	if diff := cmp.Diff(want, c, cmpCommand); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	java := `{"code":0,"flag":1,"language":"JAVA","version":395,"opaque":7,"remark":null,` +
		`"extFields":{"msgId":"7F00","queueId":"2","n":null},"serializeTypeCurrentRPC":"JSON","x":[1,{"a":[]}]}`
	c = &Command{}
	if err := decodeJSONHeader([]byte(java), c, 0); err != nil {
		t.Fatal(err)
	}
	want = &Command{Code: 0, Flag: 1, Language: LanguageJava, Version: 395, Opaque: 7,
		ExtFields: map[string]string{"msgId": "7F00", "queueId": "2", "n": ""}}
	if diff := cmp.Diff(want, c, cmpCommand); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestJSONEscapes(t *testing.T) {
	hdr := `{"code":1,"remark":"a\u0001b\u0002\ud83d\ude00\n\"\\\/","extFields":{"k\u00e9":"v"}}`
	c := &Command{}
	if err := decodeJSONHeader([]byte(hdr), c, 0); err != nil {
		t.Fatal(err)
	}
	if want := "a\x01b\x02😀\n\"\\/"; c.Remark != want {
		t.Fatalf("remark %q, want %q", c.Remark, want)
	}
	if c.ExtFields["ké"] != "v" {
		t.Fatalf("ext %v", c.ExtFields)
	}
	enc := appendJSONString(nil, "a\x01\xff")
	if string(enc) != `"a\u0001\ufffd"` {
		t.Fatalf("encoded %s", enc)
	}
}

func TestMalformedFrames(t *testing.T) {
	cases := map[string][]byte{
		"short length":       {0, 0, 0, 2, 0, 0},
		"negative length":    {0xff, 0xff, 0xff, 0xff},
		"header overruns":    {0, 0, 0, 8, 0, 0, 0, 9, '{', '}', 0, 0},
		"unknown serializer": {0, 0, 0, 6, 7, 0, 0, 2, '{', '}'},
		"bad json":           {0, 0, 0, 7, 0, 0, 0, 3, '{', 'x', '}'},
		"json not object":    {0, 0, 0, 6, 0, 0, 0, 2, '[', ']'},
		"binary too short":   {0, 0, 0, 7, 1, 0, 0, 3, 1, 2, 3},
		"code overflows":     append([]byte{0, 0, 0, 23, 0, 0, 0, 19}, `{"code":9999999999}`...),
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			f, n, err := SplitFrame(raw, 1024)
			if err == nil && n > 0 {
				_, err = DecodeFrame(f)
			}
			if !errors.Is(err, ErrMalformedFrame) {
				t.Fatalf("got %v, want ErrMalformedFrame", err)
			}
		})
	}
	big := []byte{0, 0x10, 0, 0}
	if _, _, err := SplitFrame(big, 1024); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversize frame: %v", err)
	}
}

func TestHeaderFieldErrors(t *testing.T) {
	r := NewFieldReader(map[string]string{"queueId": "x", "topic": "T"})
	_ = r.String("topic", true)
	_ = r.Int32("queueId", true)
	_ = r.Int64("offset", true)
	var he *HeaderError
	if !errors.As(r.Err(), &he) || he.Field != "queueId" {
		t.Fatalf("first error should name queueId, got %v", r.Err())
	}
	resp := ErrorResponse(r.Err())
	if resp.Code != SystemError || !strings.Contains(resp.Remark, "queueId") {
		t.Fatalf("response %d %q", resp.Code, resp.Remark)
	}
}

func TestEncodeHeaderAllocatesNothing(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		c := sampleCommand(st)
		buf := make([]byte, 0, 4096)
		allocs := testing.AllocsPerRun(100, func() { buf = AppendFrameHeader(buf[:0], c) })
		if allocs != 0 {
			t.Errorf("serialize %d: %v allocs per encode, want 0", st, allocs)
		}
	}
}

// Decoded header strings share copies of the header (headerStrings) but never the frame: a
// reader may reuse its buffer as soon as the frame is decoded. Shapes around the pending
// array of the JSON decoder (24 entries) and around the copy window are covered.
func TestDecodedHeaderOutlivesTheFrame(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n-1) + "!" }
	shapes := map[string]map[string]string{
		"none":      nil,
		"interned":  {"topic": "TBW102", "queueId": "0", "batch": "false"},
		"window-1":  {"k": long(headerStringWindow - 1), "k2": "after"},
		"window":    {"k": long(headerStringWindow), "k2": "after"},
		"window+1":  {"k": long(headerStringWindow + 1), "k2": "after"},
		"straddles": {"k1": long(headerStringWindow / 2), "k2": long(headerStringWindow / 2), "k3": long(3 * headerStringWindow)},
	}
	for _, n := range []int{1, 8, 9, jsonPendingExtFields, jsonPendingExtFields + 1, 3 * jsonPendingExtFields} {
		ext := map[string]string{}
		for i := range n {
			ext["key"+itoa(int64(i))] = "value " + itoa(int64(i))
		}
		shapes["fields="+itoa(int64(n))] = ext
	}
	for name, ext := range shapes {
		for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			t.Run(name+"/"+serializeNames[st], func(t *testing.T) {
				in := &Command{Code: SendMessage, Language: LanguageJava, Version: 395, Opaque: 3,
					Remark: "remark " + name, ExtFields: ext, Serialize: st}
				want := *in
				frame := AppendFrame(nil, in)[4:]
				out, err := DecodeFrame(frame)
				if err != nil {
					t.Fatal(err)
				}
				for i := range frame {
					frame[i] = 0xAA
				}
				if diff := cmp.Diff(&want, out, cmpCommand, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("after the frame was overwritten (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// The strings of a header cost one allocation however many fields it has: a header whose 14
// values are all distinct costs one more than the same keys with interned values.
func TestHeaderStringsShareOneAllocation(t *testing.T) {
	interned, distinct := map[string]string{}, map[string]string{}
	for i, k := range strings.Split("abcdefghijklmn", "") {
		interned[k] = "0"
		distinct[k] = "value-" + itoa(int64(i))
	}
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		allocs := func(ext map[string]string) float64 {
			frame := AppendFrame(nil, &Command{Code: SendMessageV2, ExtFields: ext, Serialize: st})[4:]
			return testing.AllocsPerRun(100, func() {
				if _, err := DecodeFrame(frame); err != nil {
					t.Fatal(err)
				}
			})
		}
		if base, got := allocs(interned), allocs(distinct); got != base+1 {
			t.Errorf("%s: %v allocations with distinct values, %v with interned ones: want one more",
				serializeNames[st], got, base)
		}
	}
}

// headerStrings returns exactly the bytes asked for, and no copy it makes is longer than the
// window, so one kept value never holds more of its header than that.
func TestHeaderStringsWindow(t *testing.T) {
	b := make([]byte, 5*headerStringWindow)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	pieces := [][2]int{{0, 0}, {3, 10}, {5, 9}, {10, headerStringWindow + 2}, {headerStringWindow, headerStringWindow + 40},
		{2 * headerStringWindow, 4*headerStringWindow + 1}, {4*headerStringWindow - 5, 4*headerStringWindow + 5},
		{len(b) - 3, len(b)}, {1, 2}}
	s := headerStrings{b: b}
	for _, p := range pieces {
		if got := s.slice(p[0], p[1]); got != string(b[p[0]:p[1]]) {
			t.Fatalf("slice(%d, %d) = %q", p[0], p[1], got)
		}
		if len(s.window) > headerStringWindow {
			t.Fatalf("after slice(%d, %d) the copy is %d bytes, over %d", p[0], p[1], len(s.window), headerStringWindow)
		}
	}
}

// RocketMQ 5's codes (POP_MESSAGE 200050 ...) exceed the short the ROCKETMQ header carries: they
// travel in JSON whatever the command asked for, and decode whole; narrower codes keep the
// binary header.
func TestWideCodesTravelInJSON(t *testing.T) {
	for _, tc := range []struct {
		code    int32
		ask     SerializeType
		wantSer SerializeType
	}{
		{200050, SerializeJSON, SerializeJSON},
		{200050, SerializeRocketMQ, SerializeJSON},
		{-40000, SerializeRocketMQ, SerializeJSON},
		{32767, SerializeRocketMQ, SerializeRocketMQ},
		{-1, SerializeRocketMQ, SerializeRocketMQ},
	} {
		c := NewRequest(tc.code, map[string]string{"topic": "T"}, []byte("b"))
		c.Serialize = tc.ask
		f, _, err := SplitFrame(AppendFrame(nil, c), 1024)
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecodeFrame(f)
		if err != nil {
			t.Fatalf("code %d: %v", tc.code, err)
		}
		if out.Code != tc.code || out.Serialize != tc.wantSer || c.Serialize != tc.ask {
			t.Errorf("code %d asked %d: decoded code %d in %d (command now %d), want %d in %d",
				tc.code, tc.ask, out.Code, out.Serialize, c.Serialize, tc.code, tc.wantSer)
		}
	}
}
