package remoting

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

func benchCommand(st SerializeType, bodyBytes int) *Command {
	c := &Command{Code: SendMessage, Language: LanguageGo, Version: 317, Opaque: 42, Serialize: st,
		ExtFields: map[string]string{
			"producerGroup": "pg", "topic": "BenchTopic", "queueId": "3", "sysFlag": "0",
			"bornTimestamp": "1700000000000", "flag": "0", "reconsumeTimes": "0", "unitMode": "false",
			"properties":        "TAGS\x01a\x02UNIQ_KEY\x01C0A80001000000000000000000000001\x02",
			"maxReconsumeTimes": "0", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
			"batch": "false", "bname": "broker-a"},
		Body: make([]byte, bodyBytes)}
	return c
}

// BenchmarkCodec encodes into a reused buffer (the pooled path) and decodes a whole frame.
func BenchmarkCodec(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		for _, size := range []int{64, 4096} {
			name := fmt.Sprintf("%s/body=%d", map[SerializeType]string{0: "json", 1: "rocketmq"}[st], size)
			c := benchCommand(st, size)
			b.Run("encode/"+name, func(b *testing.B) {
				buf := make([]byte, 0, 8192)
				b.ReportAllocs()
				b.SetBytes(int64(len(AppendFrame(nil, c))))
				for b.Loop() {
					buf = AppendFrameHeader(buf[:0], c)
					buf = append(buf, c.Body...)
				}
			})
			frame := AppendFrame(nil, c)[4:]
			b.Run("decode/"+name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(frame) + 4))
				for b.Loop() {
					if _, err := DecodeFrame(frame); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkRoundTrip measures sync request/response against an echo processor over TCP, in
// process, and, as the floor, a raw loopback echo of the same frame bytes with no framework.
func BenchmarkRoundTrip(b *testing.B) {
	for _, callers := range []int{1, 64} {
		// tcp: the echo on a worker, as most codes are served; tcp-inline: on the event loop,
		// as a send under ASYNC_FLUSH is.
		for _, srv := range []struct {
			name  string
			start func(*testing.B) (string, func())
		}{{"tcp", benchServer}, {"tcp-inline", benchServerInline}} {
			b.Run(fmt.Sprintf("%s/callers=%d", srv.name, callers), func(b *testing.B) {
				addr, stop := srv.start(b)
				defer stop()
				c := NewClient(ClientOptions{})
				defer c.Close()
				runCallers(b, callers, func(ctx context.Context) error {
					_, err := c.InvokeSync(ctx, addr, benchRequest())
					return err
				})
			})
		}
		b.Run(fmt.Sprintf("inproc/callers=%d", callers), func(b *testing.B) {
			d := NewDispatcher(nil)
			d.Register(SendMessage, ProcessorFunc(echo), NewExecutor("bench", 8, 10000))
			d.Start()
			defer d.Close()
			tr := NewInProcTransport(func(string) *Dispatcher { return d }, nil, 0)
			defer tr.Close()
			runCallers(b, callers, func(ctx context.Context) error {
				_, err := tr.InvokeSync(ctx, "local", benchRequest())
				return err
			})
		})
		// The floors: the same frames with no Client, against the server serving inline, then
		// against a goroutine-per-connection echo on Go's own netpoller.
		b.Run(fmt.Sprintf("raw-client-inline/callers=%d", callers), func(b *testing.B) {
			addr, stop := benchServerInline(b)
			defer stop()
			rawCallers(b, addr, callers)
		})
		b.Run(fmt.Sprintf("raw-echo/callers=%d", callers), func(b *testing.B) {
			addr, stop := rawEchoServer(b)
			defer stop()
			rawCallers(b, addr, callers)
		})
	}
}

// rawCallers sends benchRequest's frame on one plain connection per caller and reads one frame
// back, with no Client in between.
func rawCallers(b *testing.B, addr string, callers int) {
	frame := AppendFrame(nil, benchRequest())
	conns := make(chan net.Conn, callers)
	for range callers {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		conns <- nc
	}
	runCallers(b, callers, func(context.Context) error {
		nc := <-conns
		defer func() { conns <- nc }()
		if _, err := nc.Write(frame); err != nil {
			return err
		}
		var prefix [4]byte
		if _, err := io.ReadFull(nc, prefix[:]); err != nil {
			return err
		}
		l, err := FrameLength(prefix[:], 0)
		if err != nil {
			return err
		}
		_, err = io.ReadFull(nc, make([]byte, l))
		return err
	})
}

func benchRequest() *Command {
	return NewRequest(SendMessage, map[string]string{"topic": "BenchTopic", "queueId": "1"}, make([]byte, 128))
}

func runCallers(b *testing.B, callers int, call func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := b.N
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if n == 0 {
					mu.Unlock()
					return
				}
				n--
				mu.Unlock()
				if err := call(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

func benchServer(b *testing.B) (string, func()) {
	return startBenchServer(func(d *Dispatcher) {
		d.Register(SendMessage, ProcessorFunc(echo), NewExecutor("bench", 8, 10000))
	})
}

// benchServerInline is benchServer with the echo served on the event loop.
func benchServerInline(b *testing.B) (string, func()) {
	return startBenchServer(func(d *Dispatcher) {
		d.RegisterInline(SendMessage, ProcessorFunc(echo), NewExecutor("bench", 8, 10000),
			func(*Command) bool { return true })
	})
}

func startBenchServer(register func(*Dispatcher)) (string, func()) {
	d := NewDispatcher(nil)
	register(d)
	d.Start()
	srv := NewServer(d, ServerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	<-srv.Ready()
	return srv.Addr(), func() { cancel(); <-done; d.Close() }
}

// rawEchoServer echoes whole frames back with plain blocking I/O, one goroutine per connection.
func rawEchoServer(b *testing.B) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				var prefix [4]byte
				for {
					if _, err := io.ReadFull(nc, prefix[:]); err != nil {
						return
					}
					l, _ := FrameLength(prefix[:], 0)
					buf := make([]byte, 4+l)
					copy(buf, prefix[:])
					if _, err := io.ReadFull(nc, buf[4:]); err != nil {
						return
					}
					if _, err := nc.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), func() { ln.Close(); wg.Wait() }
}
