package storage

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/message"
)

// TestRecordCopy: a stored record copied (message.Record.Copy) under another topic and queue is stored again with the
// same body, flag, sysFlag, times, hosts and reconsume times, and the properties given.
func TestRecordCopy(t *testing.T) {
	s := openStore(t, testOptions(t, t.TempDir()))
	in := &Message{Topic: "T", QueueID: 1, Flag: 5, Body: []byte("body"), Properties: "A\x011\x02",
		SysFlag: message.TransactionPreparedType, BornTimestamp: 1700000000000,
		BornHost: netip.MustParseAddrPort("10.0.0.1:4000"), StoreHost: netip.MustParseAddrPort("10.0.0.2:10911"),
		ReconsumeTimes: 3, PreparedTransactionOffset: 77}
	r, err := s.PutMessage(in)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.LookMessageByOffset(r.PhyOffset)
	if err != nil {
		t.Fatal(err)
	}
	var rec message.Record
	if _, err := message.DecodeRecord(raw, &rec, false); err != nil {
		t.Fatal(err)
	}
	got := (*Message)(rec.Copy("U", 4, "B\x012\x02"))
	want := *in
	want.Topic, want.QueueID, want.Properties, want.BodyCRC = "U", 4, "B\x012\x02", 0
	if diff := cmp.Diff(&want, got, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
		t.Errorf("Record.Copy (-want +got):\n%s", diff)
	}
}
