package mq_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	iproxy "github.com/mqgo/mq/internal/proxy"
	"github.com/mqgo/mq/proxy"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The hostile-client suite on the gRPC endpoint of the 5.x SDKs (issue 29): the node, in
// process and as the mqnode binary with -grpc-listen, serves an honest 4.x producer and
// consumer and an honest gRPC client throughout, while each row attacks the gRPC port. The
// shared checks of hsEnv.run apply (memory, store, names, the honest 4.x clients); each row
// also has the honest gRPC client send after the attack.

func hsGRPC() config.GRPC { return config.GRPC{Listen: "127.0.0.1:0", Service: proxy.Service()} }

func TestHostileGRPC(t *testing.T) {
	for _, mode := range []string{"inproc", "binary"} {
		t.Run(mode, func(t *testing.T) {
			e := &hsEnv{mode: mode}
			if mode == "binary" {
				e.bin = filepath.Join(t.TempDir(), "mqnode")
				if out, err := exec.Command("go", "build", "-o", e.bin, "./examples/mqnode").CombinedOutput(); err != nil {
					t.Fatalf("build mqnode: %v\n%s", err, out)
				}
			}
			e.main = e.start(t, hsNodeConfig{grpc: true})
			if e.main.grpcAddr == "" {
				t.Fatal("the node serves no gRPC endpoint")
			}
			e.honest = hsStartHonest(t, e.main.addr)
			e.honest.roundTrip(t, "warm-up")
			honest := hgDial(t, e.main.grpcAddr)
			hgHonestSend(t, honest, "warm-up")
			e.main.snapshotStore(t)
			for _, row := range []hsRow{
				{name: "grpc-1-garbage", attack: hgAttackGarbage},
				{name: "grpc-2-stream-flood", attack: hgAttackStreamFlood},
				{name: "grpc-3-unread-telemetry", attack: hgAttackUnreadTelemetry},
				{name: "grpc-4-oversized", attack: hgAttackOversized},
				{name: "grpc-5-huge-metadata", attack: hgAttackMetadata},
				{name: "grpc-6-names", attack: hgAttackNames},
			} {
				t.Run(row.name, func(t *testing.T) {
					e.run(t, row)
					hgHonestSend(t, honest, row.name)
				})
			}
		})
	}
}

// hgDial is a gRPC client of the generated API on a connection of its own.
func hgDial(t *testing.T, addr string, opts ...grpc.DialOption) apiv2.MessagingServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return apiv2.NewMessagingServiceClient(cc)
}

func hgCtx(t *testing.T, clientID string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", clientID)
}

func hgMessage(topic, id string, body []byte) *apiv2.Message {
	return &apiv2.Message{Topic: &apiv2.Resource{Name: topic}, Body: body,
		SystemProperties: &apiv2.SystemProperties{MessageId: id, MessageType: apiv2.MessageType_NORMAL,
			BornTimestamp: timestamppb.Now(), BornHost: "10.0.0.9", BodyEncoding: apiv2.Encoding_IDENTITY}}
}

// hgHonestSend is the honest gRPC client's route query and send; the 4.x consumer need not
// see it (hsEnv.run's round trips check delivery).
func hgHonestSend(t *testing.T, c apiv2.MessagingServiceClient, when string) {
	t.Helper()
	ctx := hgCtx(t, "hostile-honest-grpc")
	route, err := c.QueryRoute(ctx, &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: hsHonestTopic}})
	if err != nil || route.GetStatus().GetCode() != apiv2.Code_OK {
		t.Errorf("honest gRPC route %s: %v %v", when, route.GetStatus(), err)
		return
	}
	resp, err := c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{
		hgMessage(hsHonestTopic, "HONEST-GRPC", []byte("honest gRPC "+when))}})
	if err != nil || resp.GetStatus().GetCode() != apiv2.Code_OK {
		t.Errorf("honest gRPC send %s: %v %v", when, resp.GetStatus(), err)
	}
}

// hgH2 is a raw HTTP/2 connection: the client preface and SETTINGS written, frames in and out.
type hgH2 struct {
	*hsConn
	wmu sync.Mutex // the framer's writes
	fr  *http2.Framer
	enc *hpack.Encoder
	hb  bytes.Buffer
}

func hgDialH2(t *testing.T, addr string, settings ...http2.Setting) *hgH2 {
	t.Helper()
	c := &hgH2{hsConn: hsDial(t, addr, 0)}
	c.fr = http2.NewFramer(c.Conn, c.Conn)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.enc = hpack.NewEncoder(&c.hb)
	_ = c.SetWriteDeadline(time.Now().Add(hsTimeout))
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WriteSettings(settings...); err != nil {
		t.Fatal(err)
	}
	return c
}

// write runs f with the framer's writes to itself.
func (c *hgH2) write(f func(*http2.Framer) error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.SetWriteDeadline(time.Now().Add(hsTimeout))
	return f(c.fr)
}

// headers is the header block of a gRPC call of method, with extra fields.
func (c *hgH2) headers(method string, extra ...hpack.HeaderField) []byte {
	c.hb.Reset()
	for _, f := range append([]hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: "/apache.rocketmq.v2.MessagingService/" + method},
		{Name: ":authority", Value: "mq"}, {Name: "content-type", Value: "application/grpc"},
		{Name: "te", Value: "trailers"}, {Name: "x-mq-client-id", Value: "hostile-raw"},
	}, extra...) {
		_ = c.enc.WriteField(f)
	}
	return bytes.Clone(c.hb.Bytes())
}

// frames reads frames until the connection ends, answering the node's SETTINGS and PINGs,
// and calls seen with each.
func (c *hgH2) frames(seen func(http2.Frame)) error {
	for {
		_ = c.SetReadDeadline(time.Now().Add(hsTimeout))
		f, err := c.fr.ReadFrame()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = c.write(func(fr *http2.Framer) error { return fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = c.write(func(fr *http2.Framer) error { return fr.WritePing(true, f.Data) })
			}
		}
		seen(f)
	}
}

// grpc-1: connections that are no gRPC client: garbage, a TLS handshake to the plaintext
// port, HTTP/1.1, a frame longer than HTTP/2 allows, an endless header block. Each is closed
// by the node; the half preface is held only until the preface deadline, and ends with the row.
func hgAttackGarbage(t *testing.T, e *hsEnv) func() {
	addr := e.main.grpcAddr
	for _, junk := range [][]byte{
		bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 16<<10),
		{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03},
		[]byte("GET / HTTP/1.1\r\nHost: mq\r\n\r\n"),
		// The preface, then a DATA frame header declaring 16 MiB - 1 on stream 1.
		append([]byte(http2.ClientPreface), 0xff, 0xff, 0xff, 0x0, 0x0, 0x0, 0x0, 0x0, 0x1),
	} {
		c := hsDial(t, addr, 0)
		if err := c.write(junk); err != nil {
			t.Fatal(err)
		}
		if err := c.waitClosed(hsTimeout); err != nil {
			t.Errorf("junk %q...: %v", junk[:min(len(junk), 12)], err)
		}
	}
	// A header block continued without end (the CONTINUATION flood): the node stops reading
	// it once it exceeds the metadata bound and closes the connection.
	c := hgDialH2(t, addr)
	block := c.headers("QueryRoute")
	filler := bytes.Repeat([]byte{0x40, 0x01, 'x', 0x7f, 0x7f}, 3000) // literal fields, no end
	go func() {
		if c.write(func(fr *http2.Framer) error {
			return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block})
		}) != nil {
			return
		}
		for i := 0; i < 4000; i++ {
			if c.write(func(fr *http2.Framer) error { return fr.WriteContinuation(1, false, filler) }) != nil {
				return
			}
		}
	}()
	if err := c.waitClosed(hsTimeout); err != nil {
		t.Errorf("endless header block: %v", err)
	}
	// Half a preface stays until the node's preface deadline; the row ends it.
	half := hsDial(t, addr, 0)
	if err := half.write([]byte(http2.ClientPreface[:10])); err != nil {
		t.Fatal(err)
	}
	return half.close
}

// grpc-2: one connection opens 1000 calls and sends each only the start of a message that
// declares 16 MiB. The node advertises its bound of 100 concurrent streams, refuses the
// streams beyond it, and holds only what was sent of the others.
func hgAttackStreamFlood(t *testing.T, e *hsEnv) func() {
	c := hgDialH2(t, e.main.grpcAddr)
	var mu sync.Mutex
	var maxStreams uint32
	refused := 0
	done := make(chan error, 1)
	go func() {
		done <- c.frames(func(f http2.Frame) {
			mu.Lock()
			defer mu.Unlock()
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok {
					maxStreams = v
				}
			case *http2.RSTStreamFrame:
				if f.ErrCode == http2.ErrCodeRefusedStream {
					refused++
				}
			}
		})
	}()
	prefix := make([]byte, 5+8<<10)
	binary.BigEndian.PutUint32(prefix[1:5], 16<<20-64)
	const calls = 1000
	for i := uint32(0); i < calls; i++ {
		id := 2*i + 1
		err := c.write(func(fr *http2.Framer) error {
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.headers("QueryRoute"), EndHeaders: true}); err != nil {
				return err
			}
			return fr.WriteData(id, false, prefix)
		})
		if err != nil {
			t.Fatalf("stream %d: %v", id, err)
		}
	}
	deadline := time.Now().Add(hsTimeout)
	for {
		mu.Lock()
		r, m := refused, maxStreams
		mu.Unlock()
		if m == iproxy.DefaultMaxConcurrentStreams && r >= calls-iproxy.DefaultMaxConcurrentStreams {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("max concurrent streams %d advertised, %d of %d streams refused", m, r, calls)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return func() {
		c.close()
		<-done
	}
}

// grpc-3: Telemetry streams that write settings and never read the answers. The node's
// answers wait in the stream's flow-control window, its handler stops reading, and the
// writer is stopped by the node's window: the streams cost a bounded amount each.
func hgAttackUnreadTelemetry(t *testing.T, e *hsEnv) func() {
	const streams = 20
	const attempt = 64 << 20 // per stream, far beyond any window
	ctx, cancel := context.WithCancel(context.Background())
	typ := apiv2.ClientType_PRODUCER
	pub := &apiv2.Publishing{}
	for i := 0; i < 50; i++ {
		pub.Topics = append(pub.Topics, &apiv2.Resource{Name: hsHonestTopic})
	}
	settings := &apiv2.TelemetryCommand{Command: &apiv2.TelemetryCommand_Settings{Settings: &apiv2.Settings{
		ClientType: &typ, PubSub: &apiv2.Settings_Publishing{Publishing: pub}}}}
	size := proto.Size(settings)
	var sent [streams]atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < streams; i++ {
		c := hgDial(t, e.main.grpcAddr)
		s, err := c.Telemetry(metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "hostile-unread-"+string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sent[i].Load() < attempt {
				if s.Send(settings) != nil {
					return
				}
				sent[i].Add(int64(size))
			}
		}()
	}
	// Wait until no writer moves any more.
	var last int64 = -1
	for deadline := time.Now().Add(hsTimeout); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		var total int64
		for i := range sent {
			total += sent[i].Load()
		}
		if total == last {
			break
		}
		last = total
	}
	for i := range sent {
		if got := sent[i].Load(); got >= attempt {
			t.Errorf("stream %d: the node took all %d MiB from a client that reads nothing", i, got>>20)
		}
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// grpc-4: a message over the gRPC limit and a body over the message limit: refused, and the
// connection serves the next call.
func hgAttackOversized(t *testing.T, e *hsEnv) func() {
	c := hgDial(t, e.main.grpcAddr, grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	ctx := hgCtx(t, "hostile-oversized")
	huge := make([]byte, 17<<20)
	_, err := c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{hgMessage(hsHonestTopic, "HUGE", huge)}})
	if grpcstatus.Code(err) != codes.ResourceExhausted {
		t.Errorf("a 17 MiB message: %v, want RESOURCE_EXHAUSTED", err)
	}
	resp, err := c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{hgMessage(hsHonestTopic, "BIG", huge[:5<<20])}})
	if err != nil || resp.GetStatus().GetCode() != apiv2.Code_MESSAGE_BODY_TOO_LARGE {
		t.Errorf("a 5 MiB body: %v %v, want MESSAGE_BODY_TOO_LARGE", resp.GetStatus(), err)
	}
	hgHonestSend(t, c, "on the oversized client's connection")
	return nil
}

// grpc-5: metadata over the node's bound (8 KiB): the call is refused and the connection
// stays usable.
func hgAttackMetadata(t *testing.T, e *hsEnv) func() {
	c := hgDialH2(t, e.main.grpcAddr)
	type outcome struct {
		rst    bool
		status string
	}
	results := make(chan outcome, 1)
	report := func(o outcome) {
		select {
		case results <- o:
		default:
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.frames(func(f http2.Frame) {
			switch f := f.(type) {
			case *http2.RSTStreamFrame:
				report(outcome{rst: true})
			case *http2.MetaHeadersFrame:
				if s := f.PseudoValue("status"); s != "" && s != "200" {
					report(outcome{status: "http " + s})
				}
				for _, h := range f.RegularFields() {
					if h.Name == "grpc-status" {
						report(outcome{status: h.Value})
					}
				}
			}
		})
	}()
	block := c.headers("QueryRoute", hpack.HeaderField{Name: "x-hostile", Value: strings.Repeat("v", 64<<10)})
	// Split over HEADERS and CONTINUATION frames of the default 16 KiB.
	const chunk = 16 << 10
	err := c.write(func(fr *http2.Framer) error {
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:chunk], EndStream: true}); err != nil {
			return err
		}
		for off := chunk; off < len(block); off += chunk {
			end := min(off+chunk, len(block))
			if err := fr.WriteContinuation(1, end == len(block), block[off:end]); err != nil {
				return err
			}
		}
		return nil
	})
	// A write the node cut short (it closed the connection on the oversized block) is a
	// refusal too: what matters is that no answer says OK.
	_ = err
	select {
	case o := <-results:
		if !o.rst && o.status == "0" {
			t.Errorf("a call with 64 KiB of metadata was served")
		}
	case <-done:
		// Closing the connection is a refusal too.
	case <-time.After(hsTimeout):
		t.Error("a call with 64 KiB of metadata got no answer")
	}
	return func() {
		c.close()
		<-done
	}
}

// grpc-6: names from the network that would reach a path or a log line: topics, groups and
// client ids. Each is refused with the code the SDKs expect; hsEnv.run checks nothing
// appeared outside the store.
func hgAttackNames(t *testing.T, e *hsEnv) func() {
	c := hgDial(t, e.main.grpcAddr)
	for _, name := range append(hsBadNames, strings.Repeat("n", 300)) {
		if !utf8.ValidString(name) {
			continue // proto3 strings are UTF-8: neither gRPC side encodes or decodes this one
		}
		ctx := hgCtx(t, "hostile-names")
		route, err := c.QueryRoute(ctx, &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: name}})
		if err != nil || route.GetStatus().GetCode() != apiv2.Code_ILLEGAL_TOPIC {
			t.Errorf("route of %q: %v %v", name, route.GetStatus(), err)
		}
		send, err := c.SendMessage(ctx, &apiv2.SendMessageRequest{Messages: []*apiv2.Message{hgMessage(name, "BAD-NAME", []byte("x"))}})
		if err != nil || send.GetStatus().GetCode() != apiv2.Code_ILLEGAL_TOPIC {
			t.Errorf("send to %q: %v %v", name, send.GetStatus(), err)
		}
		// A group name that does not check is not registered (the heartbeat names no valid one).
		if _, err := c.Heartbeat(ctx, &apiv2.HeartbeatRequest{ClientType: apiv2.ClientType_SIMPLE_CONSUMER, Group: &apiv2.Resource{Name: name}}); err != nil {
			t.Errorf("heartbeat of group %q: %v", name, err)
		}
		// A client id is no file name here; a long one is refused. gRPC metadata carries
		// printable ASCII only, so the others are not sent.
		if strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
			continue
		}
		idCtx := hgCtx(t, name)
		r, err := c.Heartbeat(idCtx, &apiv2.HeartbeatRequest{ClientType: apiv2.ClientType_PRODUCER})
		if err != nil {
			t.Errorf("heartbeat as client %q: %v", name, err)
		} else if len(name) > 256 && r.GetStatus().GetCode() != apiv2.Code_BAD_REQUEST {
			t.Errorf("heartbeat as a client of %d bytes: %v", len(name), r.GetStatus())
		}
	}
	return nil
}
