package remoting

import (
	"encoding/binary"
	"fmt"
)

// DefaultMaxFrameBytes is the largest frame a server or client accepts unless told otherwise
// (RocketMQ's 16 MiB).
const DefaultMaxFrameBytes = 16 << 20

// DefaultMaxHeaderBytes is the largest header (the bytes the header-length word counts) a server
// or client decodes unless told otherwise. Ours, not RocketMQ's: RocketMQ decodes any header its
// 24-bit length allows. 64 KiB is twice what SEND_MESSAGE's properties may take (32 KiB).
const DefaultMaxHeaderBytes = 64 << 10

// DefaultMaxExtFields is the largest number of extFields entries decoded from one header unless
// told otherwise. Ours, not RocketMQ's; RocketMQ's own headers carry a few dozen at most.
const DefaultMaxExtFields = 256

// DecodeLimits bounds what one frame's header may cost to decode. Both are checked before the
// decoder allocates for what they count: the header length before any field is read, the field
// count before each field enters the map. The zero value of each field means its default.
type DecodeLimits struct {
	// MaxHeaderBytes is the largest header accepted. Default DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// MaxExtFields is the largest number of extFields entries accepted. Default
	// DefaultMaxExtFields.
	MaxExtFields int
	// rawSendHeaders leaves the extension fields of a binary send request unparsed
	// (Command.rawExt): the server's, whose dispatcher parses them for every processor that
	// does not read them raw (Dispatcher.ReadsRawHeader).
	rawSendHeaders bool
}

func (l DecodeLimits) withDefaults() DecodeLimits {
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxExtFields <= 0 {
		l.MaxExtFields = DefaultMaxExtFields
	}
	return l
}

// frameOverhead is the 4-byte length word plus the 4-byte header-length word.
const frameOverhead = 8

// FrameLength validates the 4-byte length prefix of a frame and returns L, the number of bytes
// that follow it. prefix must hold at least 4 bytes. maxFrame bounds the whole frame, the length
// word included, as RocketMQ's NettyDecoder counts frameMaxLength: L may be maxFrame-4 at most.
func FrameLength(prefix []byte, maxFrame int) (int, error) {
	l := int(int32(binary.BigEndian.Uint32(prefix)))
	if l < 4 {
		return 0, malformed("frame length %d is under the 4-byte header-length word", l)
	}
	if maxFrame > 0 && l > maxFrame-4 {
		return 0, fmt.Errorf("%w: %d bytes with its length word, maximum %d", ErrFrameTooLarge, l+4, maxFrame)
	}
	return l, nil
}

// SplitFrame finds the first whole frame in buf. It returns the frame without its length prefix
// and the number of bytes of buf it spans; n is 0 when buf does not yet hold a whole frame. An
// error means the stream is corrupt.
func SplitFrame(buf []byte, maxFrame int) (frame []byte, n int, err error) {
	if len(buf) < 4 {
		return nil, 0, nil
	}
	l, err := FrameLength(buf, maxFrame)
	if err != nil {
		return nil, 0, err
	}
	if len(buf) < 4+l {
		return nil, 0, nil
	}
	return buf[4 : 4+l], 4 + l, nil
}

// DecodeFrame decodes a frame without its length prefix: the header-length word, the header and
// the body, within the default DecodeLimits. The returned command's Body aliases frame; the
// caller must own frame.
func DecodeFrame(frame []byte) (*Command, error) {
	return DecodeFrameLimits(frame, DecodeLimits{})
}

// DecodeFrameLimits is DecodeFrame within lim. A header over a limit fails with
// ErrHeaderTooLarge or ErrTooManyExtFields, naming the limit.
func DecodeFrameLimits(frame []byte, lim DecodeLimits) (*Command, error) {
	lim = lim.withDefaults()
	if len(frame) < 4 {
		return nil, malformed("frame of %d bytes has no header-length word", len(frame))
	}
	word := binary.BigEndian.Uint32(frame)
	st := SerializeType(word >> 24)
	hl := int(word & 0xFFFFFF)
	if hl > lim.MaxHeaderBytes {
		return nil, fmt.Errorf("%w: %d bytes, MaxHeaderBytes is %d", ErrHeaderTooLarge, hl, lim.MaxHeaderBytes)
	}
	if hl > len(frame)-4 {
		return nil, malformed("header length %d exceeds frame of %d bytes", hl, len(frame))
	}
	header := frame[4 : 4+hl]
	c := &Command{Serialize: st}
	var err error
	switch st {
	case SerializeJSON:
		err = decodeJSONHeader(header, c, lim.MaxExtFields)
	case SerializeRocketMQ:
		err = decodeBinaryHeader(header, c, lim.MaxExtFields, lim.rawSendHeaders)
	default:
		return nil, malformed("unknown serialize type %d", st)
	}
	if err != nil {
		return nil, err
	}
	if body := frame[4+hl:]; len(body) > 0 {
		c.Body = body
	}
	return c, nil
}

// AppendFrameHeader appends the length word, the header-length word and the encoded header of c
// to dst, with the length word counting len(c.Body) bytes of body that the caller writes next.
// It allocates nothing when dst has room.
func AppendFrameHeader(dst []byte, c *Command) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	ser := c.Serialize
	if ser == SerializeRocketMQ && !binaryCarries(c.Code) {
		// The ROCKETMQ header has a short for the code: a wider one (RocketMQ 5's POP codes)
		// goes out in JSON, which every peer decodes, rather than truncated into another
		// request's code as Java's encoder would.
		ser = SerializeJSON
	}
	switch ser {
	case SerializeRocketMQ:
		dst = appendBinaryHeader(dst, c)
	default:
		dst = appendJSONHeader(dst, c)
	}
	hl := len(dst) - start - frameOverhead
	binary.BigEndian.PutUint32(dst[start:], uint32(4+hl+len(c.Body)))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(ser)<<24|uint32(hl)&0xFFFFFF)
	return dst
}

// AppendFrame appends the whole frame of c (header and body) to dst.
func AppendFrame(dst []byte, c *Command) []byte {
	return append(AppendFrameHeader(dst, c), c.Body...)
}
