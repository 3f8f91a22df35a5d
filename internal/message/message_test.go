package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sampleMessage(v6 bool) *Message {
	m := &Message{
		Topic:                     "TopicTest",
		QueueID:                   3,
		Flag:                      7,
		Body:                      []byte("hello world"),
		Properties:                MarshalProperties(map[string]string{PropertyTags: "TagA", PropertyKeys: "k1 k2"}),
		SysFlag:                   FlagCompressed,
		BornTimestamp:             1700000000123,
		BornHost:                  netip.MustParseAddrPort("10.0.0.1:5555"),
		StoreHost:                 netip.MustParseAddrPort("127.0.0.1:10911"),
		ReconsumeTimes:            2,
		PreparedTransactionOffset: 99,
	}
	if v6 {
		m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:5555")
		m.StoreHost = netip.MustParseAddrPort("[2001:db8::2]:10911")
	}
	m.BodyCRC = BodyCRC(m.Body)
	return m
}

func encode(t testing.TB, m *Message, qo, po, st int64) []byte {
	t.Helper()
	n, err := RecordSize(m)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	EncodeRecord(b, n, m, qo, po, st)
	return b
}

func TestRecordRoundTrip(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		m := sampleMessage(v6)
		b := encode(t, m, 42, 4096, 1700000000999)
		want := 91 + len(m.Body) + len(m.Topic) + len(m.Properties)
		if v6 {
			want += 24
		}
		if len(b) != want {
			t.Fatalf("v6=%v: size %d, want %d", v6, len(b), want)
		}
		var r Record
		n, err := DecodeRecord(b, &r, true)
		if err != nil || n != len(b) {
			t.Fatalf("v6=%v: decode n=%d err=%v", v6, n, err)
		}
		sys := FlagCompressed
		if v6 {
			sys |= FlagBornHostV6 | FlagStoreHostV6
		}
		got := r
		wantR := Record{
			TotalSize: int32(len(b)), Magic: MagicCode, BodyCRC: m.BodyCRC, QueueID: 3, Flag: 7,
			QueueOffset: 42, PhysicalOffset: 4096, SysFlag: sys, BornTimestamp: m.BornTimestamp,
			BornHost: m.BornHost, StoreTimestamp: 1700000000999, StoreHost: m.StoreHost,
			ReconsumeTimes: 2, PreparedTransactionOffset: 99, Body: m.Body,
			Topic: []byte(m.Topic), Properties: []byte(m.Properties),
		}
		if diff := cmp.Diff(wantR, got, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
			t.Errorf("v6=%v record (-want +got):\n%s", v6, diff)
		}
	}
}

// TestRecordLayout checks the byte positions against docs/protocol.md §9.1 with a hand-built record.
func TestRecordLayout(t *testing.T) {
	m := &Message{Topic: "T", QueueID: 1, Body: []byte("ab"), Properties: "a\x01b\x02",
		BornHost: netip.MustParseAddrPort("1.2.3.4:80"), StoreHost: netip.MustParseAddrPort("5.6.7.8:10911")}
	m.BodyCRC = BodyCRC(m.Body)
	b := encode(t, m, 5, 100, 77)
	var want []byte
	be := binary.BigEndian
	want = be.AppendUint32(want, uint32(91+2+1+4))
	want = append(want, 0xDA, 0xA3, 0x20, 0xA7)
	want = be.AppendUint32(want, uint32(m.BodyCRC))
	want = be.AppendUint32(want, 1)
	want = be.AppendUint32(want, 0)
	want = be.AppendUint64(want, 5)
	want = be.AppendUint64(want, 100)
	want = be.AppendUint32(want, 0)
	want = be.AppendUint64(want, 0)
	want = append(want, 1, 2, 3, 4, 0, 0, 0, 80)
	want = be.AppendUint64(want, 77)
	want = append(want, 5, 6, 7, 8, 0, 0, 0x2A, 0x9F)
	want = be.AppendUint32(want, 0)
	want = be.AppendUint64(want, 0)
	want = be.AppendUint32(want, 2)
	want = append(want, 'a', 'b', 1, 'T', 0, 4, 'a', 1, 'b', 2)
	if !bytes.Equal(b, want) {
		t.Fatalf("record bytes\n got %x\nwant %x", b, want)
	}
}

func TestDecodeRecordErrors(t *testing.T) {
	good := encode(t, sampleMessage(false), 1, 2, 3)
	var r Record
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"truncated", good[:len(good)-1], ErrShort},
		{"bad magic", func() []byte { b := bytes.Clone(good); b[5] ^= 1; return b }(), ErrMagic},
		{"body crc", func() []byte { b := bytes.Clone(good); b[88] ^= 1; return b }(), ErrBodyCRC},
		{"size too small", func() []byte { b := bytes.Clone(good); be := binary.BigEndian; be.PutUint32(b, 20); return b }(), ErrSize},
		{"size mismatch", func() []byte {
			b := append(bytes.Clone(good), 0)
			binary.BigEndian.PutUint32(b, uint32(len(b)))
			return b
		}(), ErrSize},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := DecodeRecord(c.b, &r, true); !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
	blank := make([]byte, 16)
	PutBlank(blank)
	if _, err := DecodeRecord(blank, &r, true); !errors.Is(err, ErrMagic) || r.Magic != BlankMagicCode || r.TotalSize != 16 {
		t.Fatalf("blank: err=%v magic=%x size=%d", err, r.Magic, r.TotalSize)
	}
}

func TestRecordSizeLimits(t *testing.T) {
	m := sampleMessage(false)
	m.Topic = string(make([]byte, 128))
	if _, err := RecordSize(m); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("topic 128: %v", err)
	}
	m = sampleMessage(false)
	m.Properties = string(make([]byte, 32768))
	if _, err := RecordSize(m); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("properties 32768: %v", err)
	}
}

func TestProperties(t *testing.T) {
	in := map[string]string{"TAGS": "a", "KEYS": "k1 k2", "EMPTY": ""}
	s := MarshalProperties(in)
	if s != "EMPTY\x01\x02KEYS\x01k1 k2\x02TAGS\x01a\x02" {
		t.Fatalf("marshal = %q", s)
	}
	if diff := cmp.Diff(in, UnmarshalProperties([]byte(s))); diff != "" {
		t.Fatal(diff)
	}
	if diff := cmp.Diff(in, UnmarshalPropertiesString(s, 3)); diff != "" {
		t.Fatal(diff)
	}
	odd := []byte("a\x01b\x01c\x02x\x01y\x02noval\x02TAGS\x01t\x02x\x01z")
	want := map[string]string{"x": "z", "TAGS": "t"} // the last of a repeated name wins
	if diff := cmp.Diff(want, UnmarshalProperties(odd)); diff != "" {
		t.Fatal(diff)
	}
	if diff := cmp.Diff(want, UnmarshalPropertiesString(string(odd), 0)); diff != "" {
		t.Fatal(diff)
	}
	if m := UnmarshalPropertiesString("", 3); m == nil || len(m) != 0 {
		t.Fatalf("empty properties = %#v, want an empty map", m)
	}
	for _, c := range []struct {
		key, want string
		ok        bool
	}{{"TAGS", "t", true}, {"x", "z", true}, {"a", "", false}, {"TAG", "", false}} {
		v, ok := PropertyValue(odd, c.key)
		if string(v) != c.want || ok != c.ok {
			t.Errorf("PropertyValue(%q) = %q,%v", c.key, v, ok)
		}
		sv, ok := PropertyValueString(string(odd), c.key)
		if sv != c.want || ok != c.ok {
			t.Errorf("PropertyValueString(%q) = %q,%v", c.key, sv, ok)
		}
	}
}

func TestTagsHashCode(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int64
	}{
		{"", 0}, {"a", 97}, {"TagA", 2598919}, {"é", 233},
		// Java: "hello world".hashCode() = 1794106052; "polygenelubricants" = Integer.MIN_VALUE.
		{"hello world", 1794106052}, {"polygenelubricants", -2147483648},
		// U+1F600 is the surrogate pair D83D DE00: 31*0xD83D + 0xDE00.
		{"\U0001F600", 31*0xD83D + 0xDE00},
	} {
		if got := TagsHashCode(c.s); got != c.want {
			t.Errorf("TagsHashCode(%q) = %d, want %d", c.s, got, c.want)
		}
		if got := int64(JavaBytesHash([]byte(c.s))); got != c.want {
			t.Errorf("JavaBytesHash(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}

func TestOffsetMsgID(t *testing.T) {
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	id := OffsetMsgID(host, 100)
	if id != "7F00000100002A9F0000000000000064" || OffsetMsgIDLen(host) != len(id) {
		t.Fatalf("id = %s", id)
	}
	h, off, err := ParseOffsetMsgID(id)
	if err != nil || h != host || off != 100 {
		t.Fatalf("parse = %v %d %v", h, off, err)
	}
	h6 := netip.MustParseAddrPort("[2001:db8::2]:10911")
	id6 := OffsetMsgID(h6, 1<<40)
	if len(id6) != 56 || OffsetMsgIDLen(h6) != 56 {
		t.Fatalf("v6 id %q", id6)
	}
	if h, off, err := ParseOffsetMsgID(id6); err != nil || h != h6 || off != 1<<40 {
		t.Fatalf("parse v6 = %v %d %v", h, off, err)
	}
	// An IPv4-mapped host is written as IPv4, an invalid one as 0.0.0.0.
	for _, h := range []netip.AddrPort{netip.MustParseAddrPort("[::ffff:10.0.0.1]:1"), {}} {
		if got := len(OffsetMsgID(h, 7)); got != OffsetMsgIDLen(h) || got != 32 {
			t.Errorf("%v: id length %d, OffsetMsgIDLen %d", h, got, OffsetMsgIDLen(h))
		}
	}
	// A unique key (IP, process id, 0, time, counter) is as long as an offset id; its process
	// id lands in the port's high bits.
	for _, bad := range []string{"", "XYZ", "7F00000100002A9F000000000000006G", "C000020230390000000001D2C6A90007"} {
		if _, _, err := ParseOffsetMsgID(bad); !errors.Is(err, ErrMsgID) {
			t.Errorf("ParseOffsetMsgID(%q) err = %v", bad, err)
		}
	}
}

func TestBatch(t *testing.T) {
	var body []byte
	body = AppendBatchElement(body, 1, []byte("one"), "TAGS\x01a\x02")
	body = AppendBatchElement(body, 2, []byte(""), "")
	body = AppendBatchElement(body, 3, []byte("three"), "KEYS\x01k\x02")
	els, err := DecodeBatch(body)
	if err != nil {
		t.Fatal(err)
	}
	want := []BatchElement{
		{Flag: 1, Body: []byte("one"), Properties: []byte("TAGS\x01a\x02")},
		{Flag: 2, Body: []byte{}, Properties: []byte{}},
		{Flag: 3, Body: []byte("three"), Properties: []byte("KEYS\x01k\x02")},
	}
	if diff := cmp.Diff(want, els); diff != "" {
		t.Fatal(diff)
	}
	if _, err := DecodeBatch(body[:len(body)-1]); !errors.Is(err, ErrSize) {
		t.Fatalf("truncated batch err = %v", err)
	}
}

func TestEncodeDecodeNoAlloc(t *testing.T) {
	m := sampleMessage(true)
	n, _ := RecordSize(m)
	buf := make([]byte, n)
	var r Record
	allocs := testing.AllocsPerRun(100, func() {
		EncodeRecord(buf, n, m, 1, 2, 3)
		if _, err := DecodeRecord(buf, &r, true); err != nil {
			t.Fatal(err)
		}
		PropertyValue(r.Properties, PropertyTags)
		JavaBytesHash(r.Topic)
	})
	if allocs != 0 {
		t.Fatalf("allocs = %v", allocs)
	}
}
