package memnet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

func listen(t *testing.T, n *Network, addr string) net.Listener {
	t.Helper()
	l, err := n.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestDialAcceptAndEcho(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		l := listen(t, n, "10.0.0.1:7000")
		var wg sync.WaitGroup
		wg.Go(func() {
			c, err := l.Accept()
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			io.Copy(c, c) // echo until the dialer closes
		})
		c, err := n.Dial(context.Background(), "tcp", "10.0.0.1:7000")
		if err != nil {
			t.Fatal(err)
		}
		msg := bytes.Repeat([]byte("abc"), BufferBytes) // more than a buffer: writes must block and resume
		got := make([]byte, len(msg))
		wg.Go(func() {
			if _, err := io.ReadFull(c, got); err != nil {
				t.Error(err)
			}
		})
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		c.Close()
		wg.Wait()
		if !bytes.Equal(got, msg) {
			t.Fatal("the echo differs from what was sent")
		}
		if c.RemoteAddr().String() != "10.0.0.1:7000" {
			t.Fatalf("remote address %s", c.RemoteAddr())
		}
	})
}

func TestPeerCloseGivesEOFAfterData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		l := listen(t, n, "10.0.0.1:7000")
		c, err := n.Dial(context.Background(), "tcp", "10.0.0.1:7000")
		if err != nil {
			t.Fatal(err)
		}
		s, _ := l.Accept()
		s.Write([]byte("bye"))
		s.Close()
		b, err := io.ReadAll(c)
		if err != nil || string(b) != "bye" {
			t.Fatalf("read %q, %v", b, err)
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("write to a closed peer: %v", err)
		}
		c.Close()
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read after Close: %v", err)
		}
	})
}

func TestDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		l := listen(t, n, "10.0.0.1:7000")
		c, _ := n.Dial(context.Background(), "tcp", "10.0.0.1:7000")
		defer c.Close()
		s, _ := l.Accept()
		defer s.Close()
		start := time.Now()
		c.SetReadDeadline(start.Add(3 * time.Second))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read past its deadline: %v", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Fatalf("deadline hit after %v", d)
		}
		// A deadline moved while a read waits applies to that read.
		c.SetReadDeadline(time.Time{})
		done := make(chan error)
		go func() { _, err := c.Read(make([]byte, 1)); done <- err }()
		synctest.Wait()
		c.SetReadDeadline(time.Now().Add(time.Second))
		if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read after the deadline moved: %v", err)
		}
		// Writes block on a full buffer and time out.
		c.SetWriteDeadline(time.Now().Add(time.Second))
		k, err := c.Write(make([]byte, BufferBytes+10))
		if k != BufferBytes || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write into a full buffer: %d, %v", k, err)
		}
	})
}

func TestRefusedAndListenerClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		if _, err := n.Dial(context.Background(), "tcp", "10.0.0.9:1"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial with no listener: %v", err)
		}
		if _, err := n.Listen("nohost:1"); err == nil {
			t.Fatal("a host name was accepted")
		}
		l, _ := n.Listen("10.0.0.1:7000")
		if _, err := n.Listen("10.0.0.1:7000"); !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("second listen: %v", err)
		}
		var conns []net.Conn
		for range backlog {
			c, err := n.Dial(context.Background(), "tcp", "10.0.0.1:7000")
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		if _, err := n.Dial(context.Background(), "tcp", "10.0.0.1:7000"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial past the backlog: %v", err)
		}
		done := make(chan error)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					done <- err
					return
				}
				c.Close()
			}
		}()
		synctest.Wait()
		l.Close()
		if err := <-done; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("accept after Close: %v", err)
		}
		for _, c := range conns {
			if _, err := c.Read(make([]byte, 1)); err != io.EOF {
				t.Fatalf("read on a connection the listener closed: %v", err)
			}
			c.Close()
		}
		// The address is free again.
		l2, err := n.Listen("10.0.0.1:7000")
		if err != nil {
			t.Fatal(err)
		}
		l2.Close()
		p, _ := n.Listen("10.0.0.1:0")
		defer p.Close()
		if p.Addr().(*net.TCPAddr).Port == 0 {
			t.Fatal("port 0 was not assigned")
		}
	})
}
