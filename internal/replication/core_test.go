package replication

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWireRoundTrip(t *testing.T) {
	var h [headerBytes]byte
	putHeader(h[:], 1<<40+7, 32<<10)
	if off, size := parseHeader(h[:]); off != 1<<40+7 || size != 32<<10 {
		t.Fatalf("header round trip: %d %d", off, size)
	}
	want := []byte{0, 0, 1, 0, 0, 0, 0, 7, 0, 0, 0x80, 0}
	if diff := cmp.Diff(want, h[:]); diff != "" {
		t.Fatalf("header bytes (-want +got):\n%s", diff)
	}
	var r [reportBytes]byte
	putReport(r[:], 0x0102030405060708)
	if diff := cmp.Diff([]byte{1, 2, 3, 4, 5, 6, 7, 8}, r[:]); diff != "" || parseReport(r[:]) != 0x0102030405060708 {
		t.Fatalf("report bytes (-want +got):\n%s", diff)
	}
}

func TestCheckHeaderAndReport(t *testing.T) {
	for _, tc := range []struct {
		name             string
		expected, offset int64
		size             int32
		ok               bool
	}{
		{"block", 100, 100, 10, true},
		{"heartbeat", 100, 100, 0, true},
		{"max size", 0, 0, MaxBlockBytes, true},
		{"behind", 100, 90, 10, false},
		{"ahead", 100, 110, 10, false},
		{"negative size", 0, 0, -1, false},
		{"oversize", 0, 0, MaxBlockBytes + 1, false},
	} {
		t.Run("header/"+tc.name, func(t *testing.T) {
			err := checkHeader(tc.expected, tc.offset, tc.size)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrProtocol)) {
				t.Fatalf("checkHeader: %v", err)
			}
		})
	}
	for _, tc := range []struct {
		name                string
		offset, minOff, max int64
		ok                  bool
	}{
		{"empty logs", 0, 0, 0, true},
		{"new slave", 0, 0, 500, true},
		{"caught up", 500, 0, 500, true},
		{"ahead", 501, 0, 500, false},
		{"negative", -1, 0, 500, false},
		{"behind retention", 10, 100, 500, false},
	} {
		t.Run("report/"+tc.name, func(t *testing.T) {
			err := checkReport(tc.offset, tc.minOff, tc.max)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrProtocol)) {
				t.Fatalf("checkReport: %v", err)
			}
		})
	}
}

func released(w *waiter) bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

func TestGroupTransfer(t *testing.T) {
	var g groupTransfer
	if _, err := g.add(10, 1000); !errors.Is(err, ErrNoSlave) {
		t.Fatalf("add with no slave: %v", err)
	}
	g.connected()
	if w, err := g.add(0, 1000); w != nil || err != nil {
		t.Fatalf("add(0) = %v, %v; want already acknowledged", w, err)
	}
	if _, err := g.add(1001, 1000); !errors.Is(err, ErrNoSlave) {
		t.Fatalf("add past fall-behind max: %v", err)
	}
	var ws []*waiter
	for _, off := range []int64{30, 10, 20, 10, 40} {
		w, err := g.add(off, 1000)
		if err != nil || w == nil {
			t.Fatalf("add(%d) = %v, %v", off, w, err)
		}
		ws = append(ws, w)
	}
	state := func() []bool {
		var out []bool
		for _, w := range ws {
			out = append(out, released(w))
		}
		return out
	}
	g.ack(5)
	if diff := cmp.Diff([]bool{false, false, false, false, false}, state()); diff != "" {
		t.Fatalf("after ack(5) (-want +got):\n%s", diff)
	}
	g.ack(20)
	if diff := cmp.Diff([]bool{false, true, true, true, false}, state()); diff != "" {
		t.Fatalf("after ack(20) (-want +got):\n%s", diff)
	}
	g.ack(15) // acks never go back
	if g.acked() != 20 {
		t.Fatalf("acked %d after a lower ack", g.acked())
	}
	if g.remove(ws[1]) != true {
		t.Fatal("remove of a released waiter: want released")
	}
	if g.remove(ws[4]) != false || g.pending() != 1 {
		t.Fatalf("remove of a waiting waiter: pending %d", g.pending())
	}
	g.ack(35)
	if diff := cmp.Diff([]bool{true, true, true, true, false}, state()); diff != "" {
		t.Fatalf("after ack(35) (-want +got):\n%s", diff)
	}
	g.disconnected()
	if _, err := g.add(36, 1000); !errors.Is(err, ErrNoSlave) || g.pending() != 0 {
		t.Fatalf("add after the last slave left: %v, pending %d", err, g.pending())
	}
	if w, err := g.add(35, 1000); w != nil || err != nil {
		t.Fatalf("add(35) with no slave but acknowledged: %v %v", w, err)
	}
}

// FuzzCheckHeader: whatever 12 bytes arrive, an accepted header starts at the expected
// offset and has a size the slave can safely allocate.
func FuzzCheckHeader(f *testing.F) {
	var h [headerBytes]byte
	putHeader(h[:], 4096, 32<<10)
	f.Add(h[:], int64(4096))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, int64(-1))
	f.Add([]byte{0, 0, 0}, int64(0))
	f.Fuzz(func(t *testing.T, b []byte, expected int64) {
		if len(b) < headerBytes {
			return
		}
		off, size := parseHeader(b)
		if checkHeader(expected, off, size) == nil && (off != expected || size < 0 || size > MaxBlockBytes) {
			t.Fatalf("accepted offset %d size %d, expected %d", off, size, expected)
		}
		var again [headerBytes]byte
		putHeader(again[:], off, int(size))
		if string(again[:]) != string(b[:headerBytes]) {
			t.Fatalf("re-encoding %x gave %x", b[:headerBytes], again)
		}
	})
}
