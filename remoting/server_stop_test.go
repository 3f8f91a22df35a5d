package remoting

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// A connection the kernel accepts while the server stops must be closed by the time Run
// returns, like every connection the server was serving: otherwise a client that dialled in
// that window (a producer reconnecting to a master being killed) writes its request into a
// socket nobody reads or closes, and waits out its whole timeout. gnet's main reactor hands
// each accepted socket to an event loop as a queued task; a loop already told to shut down never
// runs it, so the socket stayed open for the life of the process. Each round stops a server
// while dialers keep connecting to it and sending a request it never answers (as a SYNC_MASTER
// holds a send for its slave); every one of those connections must then end promptly.
func TestServerStopClosesEveryAcceptedConnection(t *testing.T) {
	const (
		rounds  = 30
		dialers = 4
		grace   = 3 * time.Second
	)
	park := ProcessorFunc(func(context.Context, Channel, *Command) (*Command, error) { return nil, nil })
	for round := range rounds {
		d := NewDispatcher(testLogger(t))
		d.Register(1, park, NewExecutor("park", 1, 1024))
		d.Start()
		srv := NewServer(d, ServerOptions{EventLoops: 2, Logger: testLogger(t)})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx) }()
		<-srv.Ready()
		addr := srv.Addr()
		if addr == "" {
			cancel()
			t.Fatalf("server did not start: %v", <-done)
		}

		var (
			mu      sync.Mutex
			conns   []net.Conn
			wg      sync.WaitGroup
			stop    = make(chan struct{})
			dialled = make(chan struct{}, dialers)
		)
		for range dialers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for first := true; ; first = false {
					select {
					case <-stop:
						return
					default:
					}
					nc, err := net.DialTimeout("tcp", addr, time.Second)
					if first {
						dialled <- struct{}{}
					}
					if err != nil {
						continue // refused: the listener is gone
					}
					mu.Lock()
					conns = append(conns, nc)
					mu.Unlock()
					// A write to a socket the server no longer has is answered by a reset;
					// only a socket the server holds open leaves the client waiting.
					_, _ = nc.Write(AppendFrame(nil, NewRequest(1, nil, nil)))
				}
			}()
		}
		for range dialers {
			<-dialled
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("round %d: run: %v", round, err)
		}
		close(stop)
		wg.Wait()
		d.Close()

		deadline := time.Now().Add(grace)
		open := 0
		for _, nc := range conns {
			_ = nc.SetReadDeadline(deadline)
			var b [1]byte
			if _, err := nc.Read(b[:]); errors.Is(err, os.ErrDeadlineExceeded) {
				open++
			}
			nc.Close()
		}
		if open > 0 {
			t.Fatalf("round %d: %d of %d connections still open %v after the server stopped",
				round, open, len(conns), grace)
		}
	}
}
