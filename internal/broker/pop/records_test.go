package pop

import (
	"encoding/json"
	"maps"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
)

// The hand-written ack record is what encoding/json writes: byte for byte for the names a
// broker accepts, and the same record when read back for any string (encoding/json escapes
// <, > and & besides; both forms read the same).
func TestAckRecordJSONIsEncodingJSONs(t *testing.T) {
	for i, r := range []ackRecord{
		{},
		{AckOffset: 12, StartOffset: 3, Group: "g-1", Topic: "%RETRY%g_T", QueueID: 7, PopTime: 1700000000000, BrokerName: "broker-a"},
		{AckOffset: -1, StartOffset: -2, Group: "a\"b\\c\x01<>&é", Topic: "\u2028", QueueID: -1, PopTime: -5, BrokerName: "x"},
	} {
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		got := r.appendJSON(nil)
		if i < 2 && string(got) != string(want) {
			t.Errorf("appendJSON = %s\nencoding/json = %s", got, want)
		}
		var back ackRecord
		if err := json.Unmarshal(got, &back); err != nil || back != r {
			t.Errorf("appendJSON %s reads back as %+v, %v; want %+v", got, back, err, r)
		}
	}
}

// The hand-written checkpoint and batch ack records are what encoding/json writes, as the ack
// record is, and read back as written.
func TestCkAndBatchAckRecordJSONIsEncodingJSONs(t *testing.T) {
	cks := []ckRecord{
		{},
		{StartOffset: 40, PopTime: 1700000000000, InvisibleTime: 60000, QueueID: 3, Topic: "T", Group: "g", Diffs: []int32{0, 1, 5}, BrokerName: "broker-a"},
		{StartOffset: -1, PopTime: -2, InvisibleTime: -3, QueueID: -4, Topic: "a\"b\\c\x01", Group: "é", Diffs: []int32{}, BrokerName: ""},
	}
	for _, r := range cks {
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		got := r.appendJSON(nil)
		if string(got) != string(want) {
			t.Errorf("ck appendJSON = %s\nencoding/json = %s", got, want)
		}
		var back ckRecord
		if err := json.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(back, r) {
			t.Errorf("ck appendJSON %s reads back as %+v, %v; want %+v", got, back, err, r)
		}
	}
	for _, r := range []batchAckRecord{
		{},
		{ackRecord: ackRecord{AckOffset: -1, StartOffset: 3, Group: "g", Topic: "%RETRY%g_T", QueueID: 1, PopTime: 5, BrokerName: "b"}, AckOffsets: []int64{3, 4, 9}},
		{AckOffsets: []int64{}},
	} {
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.appendJSON(nil); string(got) != string(want) {
			t.Errorf("batch ack appendJSON = %s\nencoding/json = %s", got, want)
		}
	}
}

// A pop's answer sets POP_CK by appending it to the stored record in place: the record reads
// back as the one re-encoded with the property set would, for properties with and without a
// closing separator, none at all, IPv6 hosts and a key the record holds already; a record whose
// properties would outgrow the format is handed out unchanged.
func TestAppendWithPropertyIsReencoding(t *testing.T) {
	v6 := netip.MustParseAddrPort("[2001:db8::1]:10911")
	v4 := netip.MustParseAddrPort("10.0.0.1:10911")
	for name, m := range map[string]message.Message{
		"closed":   {Properties: "TAGS\x01a\x02KEYS\x01k\x02"},
		"unclosed": {Properties: "TAGS\x01a\x02KEYS\x01k"},
		"none":     {},
		"ipv6":     {Properties: "TAGS\x01a\x02", BornHost: v6, StoreHost: v6},
		"has key":  {Properties: "POP_CK\x01old\x02TAGS\x01a\x02"},
		"too long": {Properties: "P\x01" + strings.Repeat("x", message.MaxPropertiesBytes-4) + "\x02"},
	} {
		t.Run(name, func(t *testing.T) {
			m.Topic, m.QueueID, m.Body, m.BornTimestamp, m.ReconsumeTimes = "T", 3, []byte("body"), 17, 2
			if !m.BornHost.IsValid() {
				m.BornHost, m.StoreHost = v4, v4
			}
			m.BodyCRC = message.BodyCRC(m.Body)
			size, err := message.RecordSize(&m)
			if err != nil {
				t.Fatal(err)
			}
			raw := make([]byte, size)
			message.EncodeRecord(raw, size, &m, 41, 4096, 99)
			var rec message.Record
			if _, err := message.DecodeRecord(raw, &rec, true); err != nil {
				t.Fatal(err)
			}
			prefix := []byte("prefix")
			got := appendWithProperty(prefix, raw, protocol.PropertyPopCK, "1 2 3")
			want := reencodeWithProperty(nil, raw, &rec, protocol.PropertyPopCK, "1 2 3")
			if string(got[:len(prefix)]) != "prefix" {
				t.Fatalf("dst's bytes changed: %q", got[:len(prefix)])
			}
			got = got[len(prefix):]
			if name == "too long" {
				if string(got) != string(raw) || string(want) != string(raw) {
					t.Fatalf("a record too long for the property changed: %d and %d bytes, was %d", len(got), len(want), len(raw))
				}
				return
			}
			var g, w message.Record
			n, err := message.DecodeRecord(got, &g, true)
			if err != nil || n != len(got) {
				t.Fatalf("spliced record: %d of %d bytes, %v", n, len(got), err)
			}
			if _, err := message.DecodeRecord(want, &w, true); err != nil {
				t.Fatal(err)
			}
			gp, wp := message.UnmarshalPropertiesString(string(g.Properties), 0), message.UnmarshalPropertiesString(string(w.Properties), 0)
			if !maps.Equal(gp, wp) || gp[protocol.PropertyPopCK] != "1 2 3" {
				t.Errorf("properties %q, re-encoded %q", g.Properties, w.Properties)
			}
			g.Properties, w.Properties, g.TotalSize, w.TotalSize = nil, nil, 0, 0
			if !reflect.DeepEqual(g, w) {
				t.Errorf("spliced %+v\nre-encoded %+v", g, w)
			}
		})
	}
}
