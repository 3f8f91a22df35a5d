package route

import (
	"context"
	"testing"
	"time"

	"github.com/mqgo/mq/remoting"
)

// TestOverTransports serves a name server on a real remoting.Server (127.0.0.1:0) and talks to it
// over TCP and in-process: a broker registers, a client reads the route bytes, and closing the
// broker's connection removes its routes.
func TestOverTransports(t *testing.T) {
	for _, kind := range []string{"tcp", "inproc"} {
		t.Run(kind, func(t *testing.T) {
			ns := NewNameServer(Options{Logger: testLogger(t)})
			d := remoting.NewDispatcher(testLogger(t))
			ns.Register(d, remoting.NewExecutor("namesrv", 2, 128))
			d.Start()
			srv := remoting.NewServer(d, remoting.ServerOptions{Addr: "127.0.0.1:0",
				ScanInterval: 20 * time.Millisecond, Logger: testLogger(t)})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.Run(ctx) }()
			<-srv.Ready()
			addr := srv.Addr()
			if addr == "" {
				cancel()
				t.Fatalf("server did not start: %v", <-done)
			}
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("server Run: %v", err)
				}
				d.Close()
			})

			// The broker and the client use separate transports, as separate processes would.
			newTransport := func() interface {
				remoting.Transport
				CloseConn(string)
			} {
				if kind == "tcp" {
					return remoting.NewClient(remoting.ClientOptions{ScanInterval: 20 * time.Millisecond,
						Logger: testLogger(t)})
				}
				return remoting.NewInProcTransport(func(a string) *remoting.Dispatcher {
					if a == addr {
						return d
					}
					return nil
				}, nil, 20*time.Millisecond)
			}
			broker, client := newTransport(), newTransport()
			t.Cleanup(func() { broker.Close(); client.Close() })

			rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer rcancel()
			resp, err := broker.InvokeSync(rctx, addr, brokerB0.request())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := DecodeRegisterBrokerResult(resp); err != nil {
				t.Fatal(err)
			}

			resp, err = client.InvokeSync(rctx, addr, BuildGetRouteInfo("T2"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Code != remoting.Success || string(resp.Body) != routeT2 {
				t.Fatalf("route: code %d remark %q\n got %s\nwant %s", resp.Code, resp.Remark, resp.Body, routeT2)
			}
			if _, err := DecodeRouteInfoResponse(resp); err != nil {
				t.Fatal(err)
			}
			resp, err = client.InvokeSync(rctx, addr, BuildGetRouteInfo("nope"))
			if err != nil || resp.Code != remoting.TopicNotExist {
				t.Fatalf("unknown topic: %v %+v", err, resp)
			}

			// The broker's connection breaks: its routes go without waiting for expiry.
			broker.CloseConn(addr)
			waitFor(t, 5*time.Second, "routes of the disconnected broker to go", func() bool {
				resp, err := client.InvokeSync(rctx, addr, BuildGetRouteInfo("T2"))
				return err == nil && resp.Code == remoting.TopicNotExist
			})
		})
	}
}
