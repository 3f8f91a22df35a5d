package replication

import (
	"errors"
	"math"
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
	for _, tc := range []struct {
		name         string
		offset, sent int64
		ok           bool
	}{
		{"all sent", 500, 500, true},
		{"behind", 100, 500, true},
		{"zero", 0, 500, true},
		{"past sent", 501, 500, false},
		{"max int64", math.MaxInt64, 500, false},
		{"negative", -1, 500, false},
	} {
		t.Run("ack/"+tc.name, func(t *testing.T) {
			err := checkAck(tc.offset, tc.sent)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrProtocol)) {
				t.Fatalf("checkAck: %v", err)
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
	g.connect(1, 0, 0)
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
	g.report(1, 5)
	if diff := cmp.Diff([]bool{false, false, false, false, false}, state()); diff != "" {
		t.Fatalf("after report 5 (-want +got):\n%s", diff)
	}
	g.report(1, 20)
	if diff := cmp.Diff([]bool{false, true, true, true, false}, state()); diff != "" {
		t.Fatalf("after report 20 (-want +got):\n%s", diff)
	}
	// A lower report is the slave's truth now: later waiters go by it, released ones stay.
	g.report(1, 15)
	if g.acked() != 15 {
		t.Fatalf("acked %d after the slave reported 15", g.acked())
	}
	if diff := cmp.Diff([]bool{false, true, true, true, false}, state()); diff != "" {
		t.Fatalf("after a lower report (-want +got):\n%s", diff)
	}
	if w, err := g.add(20, 1000); w == nil || err != nil {
		t.Fatalf("add(20) after the slave went down to 15: %v, %v; want a waiter", w, err)
	} else if g.remove(w) {
		t.Fatal("remove of a waiting waiter: released")
	}
	if g.remove(ws[1]) != true {
		t.Fatal("remove of a released waiter: want released")
	}
	if g.remove(ws[4]) != false || g.pending() != 1 {
		t.Fatalf("remove of a waiting waiter: pending %d", g.pending())
	}
	g.report(1, 35)
	if diff := cmp.Diff([]bool{true, true, true, true, false}, state()); diff != "" {
		t.Fatalf("after report 35 (-want +got):\n%s", diff)
	}
	g.disconnect(1)
	g.report(1, 1000) // a late report of a gone slave counts for nothing
	if g.slaves() != 0 || g.acked() != 0 {
		t.Fatalf("after the last slave left: %d slaves, acked %d", g.slaves(), g.acked())
	}
	if _, err := g.add(35, 1000); !errors.Is(err, ErrNoSlave) {
		t.Fatalf("add(35) after the slave that acknowledged it left: %v, want ErrNoSlave", err)
	}
}

// The acknowledgement is the best connected slave's latest report: it follows slaves as they
// come, report and go, and one report releases every waiter it covers.
func TestGroupTransferSeveralSlaves(t *testing.T) {
	var g groupTransfer
	g.connect(1, 0, 100)
	g.connect(2, 0, 50)
	w, err := g.add(120, 1000)
	if err != nil || w == nil {
		t.Fatalf("add(120) = %v, %v", w, err)
	}
	g.report(2, 110)
	if released(w) || g.acked() != 110 {
		t.Fatalf("after slave 2 reported 110: released %v, acked %d", released(w), g.acked())
	}
	g.disconnect(2) // the best slave leaves: slave 1's 100 counts
	if g.acked() != 100 {
		t.Fatalf("acked %d after the best slave left, want 100", g.acked())
	}
	g.connect(3, 0, 130) // a slave that comes with more releases the waiter
	if !released(w) {
		t.Fatal("waiter at 120 not released by a slave connecting at 130")
	}
	g.report(3, 60) // restarted lower: slave 1 is best again
	if g.acked() != 100 {
		t.Fatalf("acked %d after slave 3 went down to 60, want 100", g.acked())
	}
	g.disconnect(1)
	g.disconnect(3)
	g.disconnect(3) // twice is harmless
	if g.slaves() != 0 || g.acked() != 0 {
		t.Fatalf("no slave left: %d slaves, acked %d", g.slaves(), g.acked())
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
