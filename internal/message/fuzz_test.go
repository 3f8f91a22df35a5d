package message

import (
	"bytes"
	"reflect"
	"testing"
)

func FuzzDecodeRecord(f *testing.F) {
	good := encode(f, sampleMessage(false), 1, 2, 3)
	good6 := encode(f, sampleMessage(true), 1, 2, 3)
	f.Add(good)
	f.Add(good6)
	f.Add(good[:40])
	f.Add(append(bytes.Clone(good), good6...))
	big := bytes.Clone(good)
	big[0], big[1] = 0x7f, 0xff // oversize length
	f.Add(big)
	blank := make([]byte, 8)
	PutBlank(blank)
	f.Add(blank)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		n, err := DecodeRecord(b, &r, true)
		if err != nil {
			return
		}
		if n > len(b) || n < MinRecordBytes || int(r.TotalSize) != n {
			t.Fatalf("n=%d len=%d total=%d", n, len(b), r.TotalSize)
		}
		// Re-encoding the decoded record must give the same bytes.
		m := &Message{Topic: string(r.Topic), QueueID: r.QueueID, Flag: r.Flag, Body: r.Body,
			Properties: string(r.Properties), SysFlag: r.SysFlag, BornTimestamp: r.BornTimestamp,
			BornHost: r.BornHost, StoreHost: r.StoreHost, ReconsumeTimes: r.ReconsumeTimes,
			PreparedTransactionOffset: r.PreparedTransactionOffset, BodyCRC: r.BodyCRC}
		size, err := RecordSize(m)
		if err != nil {
			// Topics of 128..255 bytes decode but are refused for writing, and an empty topic
			// too; nothing else.
			if len(r.Topic) > MaxTopicBytes || len(r.Topic) == 0 {
				return
			}
			t.Fatalf("RecordSize of decoded record: %v", err)
		}
		if size != n {
			// A v6 flag with an IPv4-mapped address re-encodes as IPv4.
			if r.BornHost.Addr().Is4In6() || r.StoreHost.Addr().Is4In6() {
				return
			}
			t.Fatalf("re-encoded size %d, decoded %d", size, n)
		}
		out := make([]byte, size)
		EncodeRecord(out, size, m, r.QueueOffset, r.PhysicalOffset, r.StoreTimestamp)
		if !bytes.Equal(out, b[:n]) {
			// Ports are int32 on disk but uint16 in netip.AddrPort: high bytes are dropped.
			// Everything else must survive, so the re-encoded record decodes the same.
			var r2 Record
			if _, err := DecodeRecord(out, &r2, true); err != nil {
				t.Fatalf("re-encoded record does not decode: %v", err)
			}
			r2.TotalSize, r2.BodyCRC = r.TotalSize, r.BodyCRC
			if !reflect.DeepEqual(r, r2) {
				t.Fatalf("re-encode differs\n got %+v\nwant %+v", r2, r)
			}
		}
	})
}

func FuzzBatch(f *testing.F) {
	var body []byte
	body = AppendBatchElement(body, 1, []byte("one"), "TAGS\x01a\x02")
	f.Add(body)
	f.Add(AppendBatchElement(body, 2, nil, ""))
	f.Add(body[:10])
	f.Fuzz(func(t *testing.T, b []byte) {
		els, err := DecodeBatch(b)
		if err != nil {
			return
		}
		var out []byte
		for _, e := range els {
			out = AppendBatchElement(out, e.Flag, e.Body, string(e.Properties))
		}
		if len(out) != len(b) {
			t.Fatalf("re-encoded %d bytes of %d", len(out), len(b))
		}
	})
}

func FuzzProperties(f *testing.F) {
	f.Add([]byte("a\x01b\x02c\x01\x02"))
	f.Add([]byte("\x01\x01\x02\x02"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := UnmarshalProperties(b)
		if ms := UnmarshalPropertiesString(string(b), 3); !reflect.DeepEqual(m, ms) {
			t.Fatalf("UnmarshalPropertiesString = %q, UnmarshalProperties = %q", ms, m)
		}
		for k, v := range m {
			got, ok := PropertyValue(b, k)
			if !ok || string(got) != v {
				t.Fatalf("PropertyValue(%q) = %q,%v want %q", k, got, ok, v)
			}
		}
	})
}
