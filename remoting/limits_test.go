package remoting

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

var serializeNames = map[SerializeType]string{SerializeJSON: "json", SerializeRocketMQ: "rocketmq"}

// headerOf returns the frame of c (without its length prefix) and its header length.
func headerOf(c *Command) ([]byte, int) {
	frame := AppendFrame(nil, c)[4:]
	return frame, int(binary.BigEndian.Uint32(frame) & 0xFFFFFF)
}

// commandWithHeader returns a command whose encoded header is exactly size bytes, padded
// through its remark.
func commandWithHeader(t *testing.T, st SerializeType, size int) []byte {
	t.Helper()
	c := &Command{Code: SendMessage, Serialize: st, ExtFields: map[string]string{"topic": "T"}}
	_, base := headerOf(c)
	c.Remark = strings.Repeat("r", size-base)
	frame, hl := headerOf(c)
	if hl != size {
		t.Fatalf("built a header of %d bytes, want %d", hl, size)
	}
	return frame
}

func commandWithFields(st SerializeType, n int) []byte {
	ext := make(map[string]string, n)
	for i := range n {
		ext[fmt.Sprintf("k%d", i)] = "v"
	}
	frame, _ := headerOf(&Command{Code: SendMessage, Serialize: st, ExtFields: ext})
	return frame
}

// The limits hold at their exact edges, for both header encodings, both at their defaults
// (DecodeFrame) and when set.
func TestDecodeLimitsAtTheEdges(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		t.Run(serializeNames[st], func(t *testing.T) {
			for _, lim := range []DecodeLimits{{}, {MaxHeaderBytes: 300, MaxExtFields: 5}} {
				eff := lim.withDefaults()
				decode := func(frame []byte) error {
					var err error
					if lim == (DecodeLimits{}) {
						_, err = DecodeFrame(frame)
					} else {
						_, err = DecodeFrameLimits(frame, lim)
					}
					return err
				}
				if err := decode(commandWithHeader(t, st, eff.MaxHeaderBytes)); err != nil {
					t.Errorf("header of exactly %d bytes: %v", eff.MaxHeaderBytes, err)
				}
				err := decode(commandWithHeader(t, st, eff.MaxHeaderBytes+1))
				if !errors.Is(err, ErrHeaderTooLarge) || !strings.Contains(err.Error(), "MaxHeaderBytes") {
					t.Errorf("header of %d bytes: %v, want ErrHeaderTooLarge naming MaxHeaderBytes", eff.MaxHeaderBytes+1, err)
				}
				if err := decode(commandWithFields(st, eff.MaxExtFields)); err != nil {
					t.Errorf("%d extFields: %v", eff.MaxExtFields, err)
				}
				err = decode(commandWithFields(st, eff.MaxExtFields+1))
				if !errors.Is(err, ErrTooManyExtFields) || !strings.Contains(err.Error(), "MaxExtFields") {
					t.Errorf("%d extFields: %v, want ErrTooManyExtFields naming MaxExtFields", eff.MaxExtFields+1, err)
				}
			}
		})
	}
}

// A header with many fields costs the decoder no more than the limit allows: it stops at field
// MaxExtFields+1 instead of building the whole map and then refusing it.
func TestDecodeStopsAtFieldLimit(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		t.Run(serializeNames[st], func(t *testing.T) {
			frame := commandWithFields(st, 20000)
			lim := DecodeLimits{MaxHeaderBytes: len(frame), MaxExtFields: 16}
			allocs := testing.AllocsPerRun(5, func() {
				if _, err := DecodeFrameLimits(frame, lim); !errors.Is(err, ErrTooManyExtFields) {
					t.Fatalf("got %v, want ErrTooManyExtFields", err)
				}
			})
			// Each field costs at most two strings; the map and the error a few more.
			if allocs > 3*float64(lim.MaxExtFields)+20 {
				t.Fatalf("%v allocations refusing field %d of 20000: the decoder read past the limit",
					allocs, lim.MaxExtFields+1)
			}
		})
	}
}
