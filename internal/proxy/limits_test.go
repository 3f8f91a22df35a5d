package proxy_test

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
)

// The endpoint keeps at most Limits.MaxConnections open, as each remoting listener does: one
// more is closed as it arrives, the ones open stay, and a client connects again once some
// end.
func TestGRPCMaxConnections(t *testing.T) {
	const max = 3
	n := startNode(t, func(o *mq.Options) { o.Limits.MaxConnections = max })
	var held []net.Conn
	for i := 0; i < max; i++ {
		c, err := net.Dial("tcp", n.GRPCAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	// The endpoint counts a connection once it has accepted it: wait until an extra one is
	// refused (the held ones may still be on their way in).
	deadline := time.Now().Add(wait)
	for {
		extra, err := net.Dial("tcp", n.GRPCAddr())
		if err != nil {
			t.Fatal(err)
		}
		_ = extra.SetReadDeadline(time.Now().Add(wait))
		_, err = io.ReadFull(extra, make([]byte, 1))
		extra.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a connection beyond %d: %v", max, err)
		}
	}
	// The held connections are still open: past the node's SETTINGS, a read waits instead of
	// ending.
	for i, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("held connection %d ended: %v", i, err)
		}
	}
	for _, c := range held {
		c.Close()
	}
	// Once they are gone, a client connects.
	c := dial(t, n)
	for {
		resp, err := c.QueryRoute(as(t, "after"), &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: "NoSuchTopic"}})
		if err == nil && resp.Status.Code == apiv2.Code_TOPIC_NOT_FOUND {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the held connections closed: %v %v", resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isReset(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && !oe.Timeout()
}
