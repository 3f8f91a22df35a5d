package remoting

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// bodylessNode serves PULL_MESSAGE with no body allowed and SEND_MESSAGE with any, counting
// the pulls its processor saw.
func bodylessNode(t *testing.T, opts ServerOptions) (*testNode, *atomic.Int64) {
	t.Helper()
	var pulls atomic.Int64
	d := NewDispatcher(testLogger(t))
	d.Register(PullMessage, ProcessorFunc(func(context.Context, Channel, *Command) (*Command, error) {
		pulls.Add(1)
		return NewResponse(Success, "pulled"), nil
	}), NewExecutor("p", 2, 64))
	d.SetMaxBody(PullMessage, 0, "PULL_MESSAGE")
	d.Register(SendMessage, ProcessorFunc(echo), NewExecutor("s", 2, 64))
	return startNode(t, d, opts), &pulls
}

// readCommand reads frames from c until one arrives, within 10 s.
func readCommand(t *testing.T, c net.Conn, buf *[]byte) *Command {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	chunk := make([]byte, 64<<10)
	for {
		frame, n, err := SplitFrame(*buf, DefaultMaxFrameBytes)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			cmd, err := DecodeFrame(bytes.Clone(frame))
			if err != nil {
				t.Fatal(err)
			}
			*buf = (*buf)[n:]
			return cmd
		}
		k, err := c.Read(chunk)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		*buf = append(*buf, chunk[:k]...)
	}
}

// testBodyRefused sends, on c, a PULL_MESSAGE whose header announces an 8 MiB body, and only
// the first 64 KiB of it: the answer refusing it must come before the rest is sent, so the
// server did not wait for (or keep) the body. The rest is then discarded, a one-way pull with
// a body gets no answer, and the stream stays in step: a small pull with a body, a bodiless
// pull and a send are each answered.
func testBodyRefused(t *testing.T, c net.Conn, pulls *atomic.Int64) {
	t.Helper()
	const big = 8 << 20
	req := NewRequest(PullMessage, map[string]string{"consumerGroup": "g"}, make([]byte, big))
	head := AppendFrameHeader(nil, req)
	if _, err := c.Write(append(head, make([]byte, 64<<10)...)); err != nil {
		t.Fatal(err)
	}
	var buf []byte
	resp := readCommand(t, c, &buf)
	if resp.Opaque != req.Opaque || resp.Code != SystemError || !strings.Contains(resp.Remark, "PULL_MESSAGE takes no body") ||
		!strings.Contains(resp.Remark, "8388608") {
		t.Fatalf("big pull answered %d %q (opaque %d, want %d), want SYSTEM_ERROR naming the body", resp.Code, resp.Remark,
			resp.Opaque, req.Opaque)
	}
	if _, err := c.Write(make([]byte, big-64<<10)); err != nil {
		t.Fatal(err)
	}
	oneway := NewRequest(PullMessage, nil, make([]byte, 1<<20))
	oneway.Flag |= FlagOneway
	small := NewRequest(PullMessage, nil, []byte("small body"))
	bare := NewRequest(PullMessage, nil, nil)
	send := NewRequest(SendMessage, nil, make([]byte, 1<<20))
	var frames []byte
	for _, r := range []*Command{oneway, small, bare, send} {
		frames = AppendFrame(frames, r)
	}
	if _, err := c.Write(frames); err != nil {
		t.Fatal(err)
	}
	// Answers come as their executors finish, in any order.
	got := map[int32]*Command{}
	for range 3 {
		resp := readCommand(t, c, &buf)
		got[resp.Opaque] = resp
	}
	for _, want := range []struct {
		req    *Command
		code   int32
		remark string
	}{{small, SystemError, "carried 10 bytes"}, {bare, Success, "pulled"}, {send, Success, ""}} {
		resp := got[want.req.Opaque]
		if resp == nil || resp.Code != want.code || !strings.Contains(resp.Remark, want.remark) {
			t.Fatalf("opaque %d answered %+v, want %d %q", want.req.Opaque, resp, want.code, want.remark)
		}
	}
	if n := pulls.Load(); n != 1 {
		t.Errorf("the processor saw %d pulls, want only the bodiless one", n)
	}
}

func TestServerRefusesBodyBeforeItArrives(t *testing.T) {
	n, pulls := bodylessNode(t, ServerOptions{})
	c, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testBodyRefused(t, c, pulls)
	sc := serverConnOf(t, n.srv, c)
	if in, _ := loopState(t, sc); in > 1<<20 {
		t.Errorf("the server buffers %d bytes of the connection after the refused bodies", in)
	}
}

func TestTLSServerRefusesBodyBeforeItArrives(t *testing.T) {
	certs := testCerts(t)
	n, pulls := bodylessNode(t, ServerOptions{TLSMode: TLSEnforcing, TLSConfig: certs.Server()})
	c, err := tls.Dial("tcp", n.addr, certs.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testBodyRefused(t, c, pulls)
}

// The in-process path (Dispatch) refuses the same requests.
func TestDispatchRefusesBody(t *testing.T) {
	n, pulls := bodylessNode(t, ServerOptions{})
	got := make(chan *Command, 1)
	ch := &recordingChannel{write: func(c *Command) { got <- c }}
	n.d.Dispatch(ch, NewRequest(PullMessage, nil, []byte("x")))
	select {
	case resp := <-got:
		if resp.Code != SystemError || !strings.Contains(resp.Remark, "takes no body") {
			t.Fatalf("answered %d %q", resp.Code, resp.Remark)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	if pulls.Load() != 0 {
		t.Error("the processor saw the pull")
	}
}

// recordingChannel is a Channel that hands every response to write.
type recordingChannel struct {
	write func(*Command)
}

func (c *recordingChannel) ID() uint64         { return 1 }
func (c *recordingChannel) RemoteAddr() string { return "127.0.0.1:1" }
func (c *recordingChannel) LocalAddr() string  { return "127.0.0.1:2" }
func (c *recordingChannel) WriteResponse(resp *Command) error {
	c.write(resp)
	return nil
}
func (c *recordingChannel) InvokeSync(context.Context, *Command) (*Command, error) {
	return nil, ErrConnClosed
}
func (c *recordingChannel) InvokeAsync(context.Context, *Command, func(*Command, error)) error {
	return ErrConnClosed
}
func (c *recordingChannel) InvokeOneway(*Command) error { return ErrConnClosed }
func (c *recordingChannel) Close() error                { return nil }
func (c *recordingChannel) Closed() bool                { return false }
