package broker

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/mqgo/mq/remoting"
)

func TestContiguous(t *testing.T) {
	buf := []byte("aaabbbcccddd")
	joined, ok := contiguous([][]byte{buf[0:3:3], buf[3:6:6], buf[6:12:12]}, 12)
	if !ok || string(joined) != "aaabbbcccddd" || unsafe.SliceData(joined) != unsafe.SliceData(buf) {
		t.Errorf("adjacent slices: %q %v", joined, ok)
	}
	if _, ok := contiguous([][]byte{buf[0:3], buf[6:9]}, 6); ok {
		t.Error("a gap was joined")
	}
	if _, ok := contiguous([][]byte{buf[3:6], buf[0:3]}, 6); ok {
		t.Error("reversed slices joined")
	}
	if _, ok := contiguous(nil, 0); ok {
		t.Error("nothing joined")
	}
}

func TestSetPullBodyLendsStoredRecords(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 2)
	// One queue written alone: its records lie back to back and are lent without a copy.
	putMsgs(t, tb, "T", 0, 4, "", "solo")
	r := tb.Store().GetMessage("g", "T", 0, 0, 32, 0, nil)
	resp := remoting.NewResponse(remoting.Success, "")
	first := unsafe.SliceData(r.Messages[0])
	setPullBody(resp, r)
	if unsafe.SliceData(resp.Body) != first || len(resp.Body) != r.TotalBytes {
		t.Error("contiguous records were copied")
	}
	resp.OnWritten()

	// Two queues written in turn: the records interleave and are copied once.
	for range 3 {
		putMsgs(t, tb, "T", 1, 1, "", "x")
		putMsgs(t, tb, "T", 0, 1, "", "y")
	}
	r = tb.Store().GetMessage("g", "T", 1, 0, 32, 0, nil)
	var want []byte
	for _, m := range r.Messages {
		want = append(want, m...)
	}
	resp = remoting.NewResponse(remoting.Success, "")
	setPullBody(resp, r)
	if !bytes.Equal(want, resp.Body) {
		t.Error("copied body differs from the records")
	}
	resp.OnWritten()
}
