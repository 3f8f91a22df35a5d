package consumer_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/tlstest"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
)

// tlsNameServer is a TLS listener with a test certificate for 127.0.0.1 that completes
// each handshake, records it and the requests that follow, and answers each TOPIC_NOT_EXIST, as
// a name service that knows no topic would.
type tlsNameServer struct {
	addr   string
	client *tls.Config // trusts the listener's certificate
	seen   chan tlsRequest
}

// tlsRequest is one request read after a completed handshake.
type tlsRequest struct {
	version uint16 // the TLS version negotiated
	code    int32
	topic   string
}

func startTLSNameServer(t *testing.T) *tlsNameServer {
	t.Helper()
	certs, err := tlstest.New()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", certs.Server())
	if err != nil {
		t.Fatal(err)
	}
	s := &tlsNameServer{addr: ln.Addr().String(), client: certs.Client(), seen: make(chan tlsRequest, 64)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(c.(*tls.Conn))
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

// serve answers the requests of one connection until it closes.
func (s *tlsNameServer) serve(c *tls.Conn) {
	defer c.Close()
	if err := c.Handshake(); err != nil {
		return
	}
	version := c.ConnectionState().Version
	r := bufio.NewReader(c)
	prefix := make([]byte, 4)
	for {
		if _, err := io.ReadFull(r, prefix); err != nil {
			return
		}
		l, err := remoting.FrameLength(prefix, remoting.DefaultMaxFrameBytes)
		if err != nil {
			return
		}
		frame := make([]byte, l)
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		req, err := remoting.DecodeFrame(frame)
		if err != nil {
			return
		}
		s.seen <- tlsRequest{version: version, code: req.Code, topic: req.Ext("topic")}
		resp := remoting.NewResponseFor(req, remoting.TopicNotExist, "No topic route info in name server for the topic: "+req.Ext("topic"))
		resp.Serialize = req.Serialize
		if _, err := c.Write(remoting.AppendFrame(nil, resp)); err != nil {
			return
		}
	}
}

// TestWithTLSDialsTLS: a push consumer and a producer WithTLS reach their name server over
// TLS (the handshake verifies the listener's certificate for the dialled host) and get its
// answer back through it: the send fails with the name server's TOPIC_NOT_EXIST, and the
// consumer starts on it (a topic created later is consumed then), having read it.
func TestWithTLSDialsTLS(t *testing.T) {
	wantErr := map[string]bool{"push consumer": false, "producer": true}
	clients := map[string]func(ns *tlsNameServer) error{
		"push consumer": func(ns *tlsNameServer) error {
			c, err := consumer.NewPushConsumer(consumer.WithNameServers(ns.addr), consumer.WithGroup("tls-cg"),
				consumer.WithInstanceName("tls-c"), consumer.WithTLS(ns.client))
			if err != nil {
				return err
			}
			defer c.Close()
			err = c.Subscribe("OverTLS", "*", func(context.Context, []*consumer.Message) (consumer.ConsumeResult, error) {
				return consumer.ConsumeSuccess, nil
			})
			if err != nil {
				return err
			}
			return c.Start()
		},
		"producer": func(ns *tlsNameServer) error {
			p, err := producer.New(producer.WithNameServers(ns.addr), producer.WithInstanceName("tls-p"),
				producer.WithTLS(ns.client))
			if err != nil {
				return err
			}
			defer p.Close()
			_, err = p.SendSync(context.Background(), producer.NewMessage("OverTLS", []byte("x")))
			return err
		},
	}
	for name, run := range clients {
		t.Run(name, func(t *testing.T) {
			ns := startTLSNameServer(t)
			err := run(ns)
			var re *remoting.ResponseError
			if wantErr[name] && (!errors.As(err, &re) || re.Code != remoting.TopicNotExist) {
				t.Fatalf("against the TLS name server: %v, want its TOPIC_NOT_EXIST", err)
			}
			if !wantErr[name] && err != nil {
				t.Fatalf("against the TLS name server: %v, want a start that waits for the topic", err)
			}
			// The answer came back, so the listener has recorded the request it answered.
			var read []tlsRequest
			for len(ns.seen) > 0 {
				read = append(read, <-ns.seen)
			}
			if !slices.ContainsFunc(read, func(r tlsRequest) bool {
				return r.version >= tls.VersionTLS12 && r.code == remoting.GetRouteInfoByTopic && r.topic == "OverTLS"
			}) {
				t.Fatalf("the TLS listener read %+v, want a route query for OverTLS over TLS 1.2 or later", read)
			}
		})
	}
}

// TestWithTLSRefusedWithATransport: a given transport dials as it was built to, so WithTLS
// beside it is refused.
func TestWithTLSRefusedWithATransport(t *testing.T) {
	tr := remoting.NewClient(remoting.ClientOptions{})
	defer tr.Close()
	_, err := consumer.NewPushConsumer(consumer.WithNameServers("127.0.0.1:9876"), consumer.WithGroup("tls-cg"),
		consumer.WithTransport(tr), consumer.WithTLS(&tls.Config{}))
	if err == nil {
		t.Fatal("WithTLS with WithTransport accepted")
	}
}
