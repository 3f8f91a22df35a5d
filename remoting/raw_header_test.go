package remoting

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sendV2Fields is a SEND_MESSAGE_V2 header as the Go client writes it, one-letter keys a..n.
func sendV2Fields() map[string]string {
	return map[string]string{"a": "pg", "b": "TopicA", "c": "TBW102", "d": "4", "e": "2", "f": "0",
		"g": "1764680000000", "h": "0", "i": "TAGS\x01t\x02UNIQ_KEY\x01C0A8\x02", "j": "0", "k": "false",
		"l": "16", "m": "false", "n": "broker-a"}
}

// binaryFrame encodes a command of code and flag in ROCKETMQ serialization (without the
// length word) with entries written as given, a repeated key included.
func binaryFrame(code int32, flag int32, entries [][2]string) []byte {
	var ext []byte
	for _, e := range entries {
		ext = AppendBinaryString(ext, e[0], e[1])
	}
	c := &Command{Code: code, Language: LanguageGo, Version: ProtocolVersion, Opaque: 9, Flag: flag,
		Serialize: SerializeRocketMQ, Fields: rawEntries(ext)}
	return AppendFrame(nil, c)[4:]
}

// rawEntries is a BinaryHeader writing prepared entries.
type rawEntries []byte

func (r rawEntries) AppendBinary(dst []byte) []byte { return append(dst, r...) }
func (r rawEntries) Encode(map[string]string)       { panic("rawEntries: binary only") }
func (r rawEntries) Decode(map[string]string) error { panic("rawEntries: binary only") }
func (r rawEntries) ExtFieldsCap() int              { return 0 }

func sortedEntries(m map[string]string) [][2]string {
	var out [][2]string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, [2]string{k, m[k]})
	}
	return out
}

// TestRawSendHeaderReadsAsTheMap: a binary SEND_MESSAGE_V2 decoded by a server keeps its
// entries unparsed, and every way of reading them (LookupExt, FieldReader in any order,
// Materialize) finds what the map decode finds.
func TestRawSendHeaderReadsAsTheMap(t *testing.T) {
	want := sendV2Fields()
	frame := binaryFrame(SendMessageV2, 0, sortedEntries(want))
	plain, err := DecodeFrameLimits(frame, DecodeLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, plain.ExtFields); diff != "" {
		t.Fatalf("map decode (-want +got):\n%s", diff)
	}
	raw, err := DecodeFrameLimits(frame, DecodeLimits{rawSendHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if raw.ExtFields != nil || raw.rawExt == "" {
		t.Fatalf("server decode built the map (%d entries) or kept no entries", len(raw.ExtFields))
	}
	for k, v := range want {
		if got, ok := raw.LookupExt(k); !ok || got != v {
			t.Errorf("LookupExt(%q) = %q, %v; want %q", k, got, ok, v)
		}
	}
	for _, k := range []string{"z", "ab", ""} {
		if got, ok := raw.LookupExt(k); ok {
			t.Errorf("LookupExt(%q) = %q, want absent", k, got)
		}
	}
	// Forward, backward and repeated reads through one reader, as a decoder makes them.
	r := raw.FieldReader()
	for _, k := range []string{"a", "b", "c", "d", "l", "l", "n", "a", "m", "i", "b", "z", "g", "g"} {
		got := r.String(k, false)
		if got != want[k] {
			t.Errorf("FieldReader.String(%q) = %q, want %q", k, got, want[k])
		}
	}
	if r.Int64("g", true) != 1764680000000 || r.Int32("l", true) != 16 || r.Err() != nil {
		t.Errorf("typed reads: g=%d l=%d err=%v", r.Int64("g", true), r.Int32("l", true), r.Err())
	}
	if r.String("z", true); r.Err() == nil {
		t.Error("a required absent field read without an error")
	}
	if raw.ExtFields != nil {
		t.Fatal("reading built the map")
	}
	raw.Materialize()
	if diff := cmp.Diff(want, raw.ExtFields); diff != "" || raw.rawExt != "" {
		t.Fatalf("Materialize (-want +got):\n%s (raw left: %d bytes)", diff, len(raw.rawExt))
	}
}

// TestRawSendHeaderOnlyWhenUnambiguous: the map is built as before for a key written twice
// (the last value wins there, and a lookup in place would find the first), a key longer than
// a letter, a response, and any other request code.
func TestRawSendHeaderOnlyWhenUnambiguous(t *testing.T) {
	base := sortedEntries(sendV2Fields())
	for _, tc := range []struct {
		name    string
		code    int32
		flag    int32
		entries [][2]string
	}{
		{"key twice", SendMessageV2, 0, append(append([][2]string{}, base...), [2]string{"b", "Other"})},
		{"long key", SendMessageV2, 0, append(append([][2]string{}, base...), [2]string{"bb", "x"})},
		{"response", SendMessageV2, FlagResponse, base},
		{"other code", SendMessage, 0, base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frame := binaryFrame(tc.code, tc.flag, tc.entries)
			plain, err := DecodeFrameLimits(frame, DecodeLimits{})
			if err != nil {
				t.Fatal(err)
			}
			c, err := DecodeFrameLimits(frame, DecodeLimits{rawSendHeaders: true})
			if err != nil {
				t.Fatal(err)
			}
			if c.rawExt != "" {
				t.Fatal("entries kept unparsed")
			}
			if diff := cmp.Diff(plain.ExtFields, c.ExtFields); diff != "" {
				t.Fatalf("(-map decode +server decode):\n%s", diff)
			}
		})
	}
	// The limit on entries holds for a raw header too.
	frame := binaryFrame(SendMessageV2, 0, base)
	if _, err := DecodeFrameLimits(frame, DecodeLimits{MaxExtFields: 3, rawSendHeaders: true}); err == nil {
		t.Fatal("14 entries accepted under MaxExtFields 3")
	}
}

// TestRawSendHeaderEncodesAgain: a request read raw and written out again, in either
// serialization, carries the same fields.
func TestRawSendHeaderEncodesAgain(t *testing.T) {
	want := sendV2Fields()
	for _, st := range []SerializeType{SerializeRocketMQ, SerializeJSON} {
		c, err := DecodeFrameLimits(binaryFrame(SendMessageV2, 0, sortedEntries(want)), DecodeLimits{rawSendHeaders: true})
		if err != nil {
			t.Fatal(err)
		}
		c.Serialize = st
		frame := AppendFrame(nil, c)
		out, err := DecodeFrame(frame[4:])
		if err != nil {
			t.Fatalf("serialize %d: %v", st, err)
		}
		if diff := cmp.Diff(want, out.ExtFields); diff != "" {
			t.Errorf("serialize %d (-want +got):\n%s", st, diff)
		}
	}
}

// TestDispatcherHandsRawHeadersOnlyToReaders: over TCP, a processor marked ReadsRawHeader gets
// a binary send with its fields unparsed, inline or on its executor; any other processor, a
// guard, and the processor behind a guard get the map; a JSON send always arrives as a map.
func TestDispatcherHandsRawHeadersOnlyToReaders(t *testing.T) {
	want := sendV2Fields()
	for _, tc := range []struct {
		name    string
		reads   bool
		inline  bool
		guard   bool
		st      SerializeType
		wantRaw bool
	}{
		{"reader inline", true, true, false, SerializeRocketMQ, true},
		{"reader on executor", true, false, false, SerializeRocketMQ, true},
		{"map reader", false, true, false, SerializeRocketMQ, false},
		{"map reader on executor", false, false, false, SerializeRocketMQ, false},
		{"reader behind a guard", true, true, true, SerializeRocketMQ, false},
		{"reader of JSON", true, true, false, SerializeJSON, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDispatcher(testLogger(t))
			type seen struct {
				ext map[string]string
				raw bool
				a   string
			}
			got := make(chan seen, 2)
			if tc.guard {
				d.SetGuard(func(_ Channel, req *Command) *Command {
					if req.ExtFields["b"] != want["b"] {
						return NewResponse(NoPermission, "guard saw no map")
					}
					return nil
				})
			}
			p := ProcessorFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
				a, _ := req.LookupExt("a")
				got <- seen{ext: maps.Clone(req.ExtFields), raw: req.rawExt != "", a: a}
				return NewResponse(Success, ""), nil
			})
			ex := NewExecutor("send", 1, 10)
			if tc.inline {
				d.RegisterInline(SendMessageV2, p, ex, func(req *Command) bool {
					v, _ := req.LookupExt("b")
					return v == want["b"]
				})
			} else {
				d.Register(SendMessageV2, p, ex)
			}
			if tc.reads {
				d.ReadsRawHeader(SendMessageV2)
			}
			n := startNode(t, d, ServerOptions{})
			c := NewClient(ClientOptions{})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req := NewRequest(SendMessageV2, sendV2Fields(), []byte("body"))
			req.Serialize = tc.st
			resp, err := c.InvokeSync(ctx, n.addr, req)
			if err != nil || resp.Code != Success {
				t.Fatalf("send: %+v, %v", resp, err)
			}
			s := <-got
			if s.a != want["a"] {
				t.Errorf("LookupExt(a) = %q", s.a)
			}
			if s.raw != tc.wantRaw {
				t.Fatalf("processor got raw entries %v, want %v", s.raw, tc.wantRaw)
			}
			if tc.wantRaw {
				if s.ext != nil {
					t.Fatal("processor got both raw entries and a map")
				}
				return
			}
			if diff := cmp.Diff(want, s.ext); diff != "" {
				t.Fatalf("map (-want +got):\n%s", diff)
			}
		})
	}
}

// letterHeader is a typed header of one-letter keys, as SEND_MESSAGE_V2's, written either way.
type letterHeader map[string]string

func (h letterHeader) Encode(m map[string]string) { maps.Copy(m, h) }
func (h letterHeader) Decode(map[string]string) error {
	panic("letterHeader: not decoded")
}
func (h letterHeader) ExtFieldsCap() int { return len(h) }
func (h letterHeader) AppendBinary(dst []byte) []byte {
	for _, k := range slices.Sorted(maps.Keys(h)) {
		dst = AppendBinaryString(dst, k, h[k])
	}
	return dst
}

// TestInProcSendReadsTypedHeaderInPlace: a send delivered in process with its typed header
// (NewRequestFields) reaches a processor marked ReadsRawHeader as binary entries, not a map,
// synchronously (on the caller) and asynchronously (on the executor); an unmarked processor
// gets the map, as does a header with a key longer than a letter.
func TestInProcSendReadsTypedHeaderInPlace(t *testing.T) {
	want := sendV2Fields()
	long := maps.Clone(want)
	long["bb"] = "x"
	for _, tc := range []struct {
		name    string
		reads   bool
		async   bool
		h       letterHeader
		wantRaw bool
	}{
		{"reader", true, false, want, true},
		{"reader, async", true, true, want, true},
		{"map reader", false, false, want, false},
		{"reader, long key", true, false, long, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDispatcher(testLogger(t))
			got := make(chan map[string]string, 1)
			raw := make(chan bool, 1)
			d.RegisterInline(SendMessageV2, ProcessorFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
				isRaw := req.ExtFields == nil
				r := req.FieldReader()
				m := map[string]string{}
				for k := range tc.h {
					m[k] = r.String(k, false)
				}
				raw <- isRaw && req.ExtFields == nil
				got <- m
				return NewResponse(Success, ""), nil
			}), NewExecutor("send", 1, 10), func(req *Command) bool {
				v, _ := req.LookupExt("b")
				return v == want["b"]
			})
			if tc.reads {
				d.ReadsRawHeader(SendMessageV2)
			}
			d.Start()
			t.Cleanup(func() { d.Close() })
			tr := NewInProcTransport(func(string) *Dispatcher { return d }, nil, 0)
			t.Cleanup(func() { tr.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req := NewRequestFields(SendMessageV2, tc.h, []byte("body"))
			if tc.async {
				done := make(chan error, 1)
				if err := tr.InvokeAsync(ctx, "node", req, func(_ *Command, err error) { done <- err }); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			} else if resp, err := tr.InvokeSync(ctx, "node", req); err != nil || resp.Code != Success {
				t.Fatalf("send: %+v, %v", resp, err)
			}
			if r := <-raw; r != tc.wantRaw {
				t.Fatalf("processor read entries in place: %v, want %v", r, tc.wantRaw)
			}
			if diff := cmp.Diff(map[string]string(tc.h), <-got); diff != "" {
				t.Fatalf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInProcRequestOutlivesCallersHeader: an in-process request is served from the fields its
// typed header had when it was sent, though the caller changes the header before a worker
// reads it (a consumer reuses its pull header), whether the processor reads in place or the map.
func TestInProcRequestOutlivesCallersHeader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  int32
		reads bool
	}{
		{"map reader", PullMessage, false},
		{"reader in place", SendMessageV2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDispatcher(testLogger(t))
			release := make(chan struct{})
			got := make(chan string, 1)
			d.Register(tc.code, ProcessorFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
				<-release
				r := req.FieldReader()
				got <- r.String("b", false)
				return NewResponse(Success, ""), nil
			}), NewExecutor("worker", 1, 10))
			if tc.reads {
				d.ReadsRawHeader(tc.code)
			}
			d.Start()
			t.Cleanup(func() { d.Close() })
			tr := NewInProcTransport(func(string) *Dispatcher { return d }, nil, 0)
			t.Cleanup(func() { tr.Close() })
			h := letterHeader(sendV2Fields())
			done := make(chan error, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tr.InvokeAsync(ctx, "node", NewRequestFields(tc.code, h, nil), func(_ *Command, err error) { done <- err }); err != nil {
				t.Fatal(err)
			}
			h["b"] = "changed after the send"
			close(release)
			if v := <-got; v != "TopicA" {
				t.Fatalf("processor read %q, want the value sent", v)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}
