package remoting

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func FuzzDecodeFrame(f *testing.F) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		frame := AppendFrame(nil, sampleCommand(st))
		f.Add(frame, uint16(0))
		f.Add(frame, uint16(len(frame)/2))
		f.Add(append(append([]byte{}, frame...), frame...), uint16(3))
		f.Add(frame[:len(frame)-1], uint16(5))
	}
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0}, uint16(1))
	f.Add([]byte{0, 0, 0, 8, 0, 0xff, 0xff, 0xff, 0, 0, 0, 0}, uint16(2))
	f.Add([]byte{0, 0, 0, 6, 1, 0, 0, 2, 0, 0}, uint16(4))
	f.Add(append([]byte{0, 0, 0, 40, 0, 0, 0, 36}, `{"extFields":{"a":[[[[[[[[[[[[[[[[[}}`...), uint16(9))

	f.Fuzz(func(t *testing.T, stream []byte, cut uint16) {
		const max = 1 << 20
		whole := splitAll(t, [][]byte{stream}, max)
		at := int(cut) % (len(stream) + 1)
		pieces := splitAll(t, [][]byte{stream[:at], stream[at:]}, max)
		if !cmp.Equal(whole, pieces) {
			t.Fatalf("frames differ when the stream is split at %d", at)
		}
		for _, fr := range whole {
			c, err := DecodeFrame(append([]byte(nil), fr...))
			if err != nil {
				continue
			}
			again, err := DecodeFrame(AppendFrame(nil, c)[4:])
			if err != nil {
				t.Fatalf("re-encoded frame does not decode: %v", err)
			}
			// A null or absent extFields re-encodes as {}: equal in meaning.
			if diff := cmp.Diff(c, again, cmpCommand, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("decode(encode(x)) != x:\n%s", diff)
			}
		}
	})
}

// splitAll feeds pieces to a buffer as a connection would and returns the whole frames found
// before the first error.
func splitAll(t *testing.T, pieces [][]byte, max int) [][]byte {
	var buf []byte
	var out [][]byte
	for _, p := range pieces {
		buf = append(buf, p...)
		for {
			fr, n, err := SplitFrame(buf, max)
			if err != nil || n == 0 {
				break
			}
			if n > len(buf) || len(fr) > n {
				t.Fatalf("split consumed %d of %d bytes", n, len(buf))
			}
			out = append(out, bytes.Clone(fr))
			buf = buf[n:]
		}
	}
	return out
}

// FuzzDecodeFrameLimits checks DecodeFrameLimits against the unlimited decoder: within the limits
// both agree, over them the limited one refuses with the limit's error and nothing else.
func FuzzDecodeFrameLimits(f *testing.F) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		frame := AppendFrame(nil, sampleCommand(st))[4:]
		f.Add(frame, uint16(len(frame)), uint8(3))
		f.Add(frame, uint16(40), uint8(200))
		f.Add(frame, uint16(2000), uint8(2))
		f.Add(commandWithFields(st, 9), uint16(4000), uint8(8))
		f.Add(commandWithFields(st, 9), uint16(4000), uint8(9))
	}
	f.Add(append([]byte{0, 0, 0, 33}, `{"extFields":{"a":"1","b":2,"c":3}}`...), uint16(100), uint8(2))

	f.Fuzz(func(t *testing.T, frame []byte, maxHeader uint16, maxExt uint8) {
		lim := DecodeLimits{MaxHeaderBytes: int(maxHeader) + 1, MaxExtFields: int(maxExt) + 1}
		got, err := DecodeFrameLimits(frame, lim)
		free, freeErr := DecodeFrameLimits(frame, DecodeLimits{MaxHeaderBytes: 1 << 24, MaxExtFields: 1 << 30})
		hl := 0
		if len(frame) >= 4 {
			hl = int(binary.BigEndian.Uint32(frame) & 0xFFFFFF)
		}
		switch {
		case err == nil:
			if freeErr != nil {
				t.Fatalf("limited decode accepted what the unlimited one refuses: %v", freeErr)
			}
			if hl > lim.MaxHeaderBytes || len(got.ExtFields) > lim.MaxExtFields {
				t.Fatalf("accepted a header of %d bytes with %d fields over %+v", hl, len(got.ExtFields), lim)
			}
			if diff := cmp.Diff(free, got, cmpCommand); diff != "" {
				t.Fatalf("limited and unlimited decodes differ:\n%s", diff)
			}
		case errors.Is(err, ErrHeaderTooLarge):
			if hl <= lim.MaxHeaderBytes {
				t.Fatalf("header of %d bytes refused under %+v: %v", hl, lim, err)
			}
		case errors.Is(err, ErrTooManyExtFields):
			if hl > lim.MaxHeaderBytes {
				t.Fatalf("the header size is checked first")
			}
		default:
			if freeErr == nil {
				t.Fatalf("limited decode failed where the unlimited one did not: %v", err)
			}
		}
		// Whatever fits both limits must decode the same way.
		if freeErr == nil && hl <= lim.MaxHeaderBytes && len(free.ExtFields) <= lim.MaxExtFields && err != nil &&
			!errors.Is(err, ErrTooManyExtFields) {
			t.Fatalf("a header within %+v was refused: %v", lim, err)
		}
	})
}

// FuzzJSONStringsAsEncodingJSON checks the hand-written JSON string decoder against
// encoding/json, which it follows (invalid UTF-8 and lone surrogates become U+FFFD): any
// string literal encoding/json accepts decodes to the same value as an extFields key, as a
// value and as the remark.
func FuzzJSONStringsAsEncodingJSON(f *testing.F) {
	for _, s := range []string{`plain`, `a\u0001b\u0002`, `\ud83d\ude00`, `\ud83d\u0041`, `\ud83dx`, `\udc00`,
		`\"\\\/\b\f\n\r\t`, "\xff\xfe", `é`, `\u00e9\u20ac`, `\ud83d\ud83d\ude00`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		var want string
		if err := json.Unmarshal([]byte(`"`+lit+`"`), &want); err != nil {
			return
		}
		hdr := `{"remark":"` + lit + `","extFields":{"` + lit + `":"` + lit + `"}}`
		c := &Command{}
		if err := decodeJSONHeader([]byte(hdr), c, 0); err != nil {
			t.Fatalf("encoding/json reads %q, we fail: %v", lit, err)
		}
		if c.Remark != want || len(c.ExtFields) != 1 || c.ExtFields[want] != want {
			t.Fatalf("%q: remark %q, extFields %q; encoding/json reads %q", lit, c.Remark, c.ExtFields, want)
		}
	})
}
