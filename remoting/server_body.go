package remoting

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/panjf2000/gnet/v2"
)

// Bodies refused before they arrive. A code whose processor takes no body, or a bounded one
// (Dispatcher.SetMaxBody), refuses a request whose body is over the limit; for a frame
// larger than maxScratchFrame the server reads its header as soon as it is in, before the
// body, and refuses the request then: the body is discarded as it arrives, never buffered,
// so a peer sending megabytes behind a PULL_MESSAGE header costs the server a read buffer,
// not megabytes per request. Smaller frames are refused once whole (Dispatcher.Serve).

// checkBody looks at the header of the frame of l bytes arriving on sc, of which n bytes
// (the length word included) are buffered. When the header is in and its code's body limit
// refuses the frame, the request is answered, what is buffered of the frame discarded and the
// rest left to skipBody; refused reports that. An error means the header cannot be decoded
// and the stream is corrupt. Loop-only.
func (s *Server) checkBody(sc *serverConn, c gnet.Conn, n, l int) (refused bool, err error) {
	if n < 8 {
		return false, nil
	}
	word, _ := c.Peek(8)
	hl := int(binary.BigEndian.Uint32(word[4:]) & 0xFFFFFF)
	if err := s.checkHeaderLength(hl, l); err != nil {
		return false, err
	}
	if n < 8+hl {
		return false, nil
	}
	head, err := c.Peek(8 + hl)
	if err != nil {
		return false, nil
	}
	req, err := DecodeFrameLimits(head[4:], s.limits)
	if err != nil {
		return false, err
	}
	body := l - 4 - hl
	if limit, ok := s.d.MaxBody(req.Code); !ok || req.IsResponse() || body <= limit {
		sc.headSeen = true
		return false, nil
	}
	if resp := s.d.RefuseBody(req, body); resp != nil {
		if sc.replies == nil {
			sc.replies = framePool.Get().(*[]byte)
			*sc.replies = (*sc.replies)[:0]
		}
		*sc.replies = AppendFrame(*sc.replies, resp)
		resp.written()
	}
	_, _ = c.Discard(n)
	sc.skip = 4 + l - n
	sc.unread = 0
	return true, nil
}

// skipBody discards what has arrived of a refused body and reports whether all of it has.
// Loop-only.
func (s *Server) skipBody(sc *serverConn, c gnet.Conn) bool {
	k := min(c.InboundBuffered(), sc.skip)
	if k > 0 {
		_, _ = c.Discard(k)
		sc.skip -= k
	}
	sc.unread = c.InboundBuffered()
	return sc.skip == 0
}

// readBigFrame reads the frame of l bytes after its length word from r, for a connection that
// reads on a goroutine of its own (TLS): the header first and, unless its code's body limit
// refuses the body, the rest. For a refused body it reads no further: skip is the length of
// the body, which the caller reads into nothing after sending answer (nil for a one-way
// request). readErr is a failed read, badFrame a frame that does not decode.
func (s *Server) readBigFrame(r io.Reader, l int) (req, answer *Command, skip int, readErr, badFrame error) {
	var word [4]byte
	if _, err := io.ReadFull(r, word[:]); err != nil {
		return nil, nil, 0, err, nil
	}
	hl := int(binary.BigEndian.Uint32(word[:]) & 0xFFFFFF)
	if err := s.checkHeaderLength(hl, l); err != nil {
		return nil, nil, 0, nil, err
	}
	head := make([]byte, 4+hl)
	copy(head, word[:])
	if _, err := io.ReadFull(r, head[4:]); err != nil {
		return nil, nil, 0, err, nil
	}
	req, err := DecodeFrameLimits(head, s.limits)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	body := l - 4 - hl
	if limit, ok := s.d.MaxBody(req.Code); ok && !req.IsResponse() && body > limit {
		return req, s.d.RefuseBody(req, body), body, nil, nil
	}
	frame := make([]byte, l)
	copy(frame, head)
	if _, err := io.ReadFull(r, frame[4+hl:]); err != nil {
		return nil, nil, 0, err, nil
	}
	if req, err = DecodeFrameLimits(frame, s.limits); err != nil {
		return nil, nil, 0, nil, err
	}
	return req, nil, 0, nil, nil
}

// checkHeaderLength refuses a header length that DecodeFrameLimits would refuse once the
// frame of l bytes were whole.
func (s *Server) checkHeaderLength(hl, l int) error {
	if hl > s.limits.MaxHeaderBytes {
		return fmt.Errorf("%w: %d bytes, MaxHeaderBytes is %d", ErrHeaderTooLarge, hl, s.limits.MaxHeaderBytes)
	}
	if hl > l-4 {
		return malformed("header length %d exceeds frame of %d bytes", hl, l)
	}
	return nil
}
