package trace

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The expected bytes below follow the official Go client's TraceContext.marshal2Bean
// (internal/trace.go) field by field: \x01 between fields, \x02 after each record.

func TestAppendPubAsTheGoClient(t *testing.T) {
	c := &Context{Type: Pub, TimeStamp: 1700000000123, RegionID: "DefaultRegion", Group: "ns%pg",
		CostTime: 7, Success: true, Beans: []Bean{{Topic: "ns%orders", MsgID: "ID1", OffsetMsgID: "OFF1",
			Tags: "TagA", Keys: "k1 k2", StoreHost: "10.0.0.1:10911", ClientHost: "10.0.0.9",
			BodyLength: 42, MsgType: DelayMsg}}}
	want := "Pub\x011700000000123\x01DefaultRegion\x01pg\x01orders\x01ID1\x01TagA\x01k1 k2\x01" +
		"10.0.0.1:10911\x0142\x017\x013\x01OFF1\x01true\x0110.0.0.9\x02"
	if got := string(Append(nil, c)); got != want {
		t.Fatalf("Pub record\n got %q\nwant %q", got, want)
	}
	if got, want := Keys(c), []string{"ID1", "k1", "k2"}; !cmp.Equal(got, want) {
		t.Fatalf("keys %q, want %q", got, want)
	}
}

func TestAppendSubRecordsAsTheGoClient(t *testing.T) {
	beans := []Bean{{MsgID: "ID1", RetryTimes: 2, ClientHost: "10.0.0.9"}, {MsgID: "ID2", Keys: "k", ClientHost: "10.0.0.9"}}
	before := &Context{Type: SubBefore, TimeStamp: 5, RegionID: "r", Group: "cg", RequestID: "REQ", Success: true, Beans: beans}
	want := "SubBefore\x015\x01r\x01cg\x01REQ\x01ID1\x012\x01null\x0110.0.0.9\x02" +
		"SubBefore\x015\x01r\x01cg\x01REQ\x01ID2\x010\x01k\x0110.0.0.9\x02"
	if got := string(Append(nil, before)); got != want {
		t.Fatalf("SubBefore records\n got %q\nwant %q", got, want)
	}
	after := &Context{Type: SubAfter, TimeStamp: 9, Group: "ns%cg", RequestID: "REQ", CostTime: 3,
		Success: false, ContextCode: ConsumeFailed, Beans: beans[:1]}
	want = "SubAfter\x01REQ\x01ID1\x013\x01false\x01null\x014\x019\x01cg\x02"
	if got := string(Append(nil, after)); got != want {
		t.Fatalf("SubAfter record\n got %q\nwant %q", got, want)
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	in := []Context{
		{Type: Pub, TimeStamp: 1, RegionID: "r", Group: "pg", CostTime: 2, Success: true, Beans: []Bean{{
			Topic: "t", MsgID: "M", OffsetMsgID: "O", Tags: "a", Keys: "k1 k2", StoreHost: "h:1",
			ClientHost: "c", BodyLength: 3, MsgType: NormalMsg}}},
		{Type: SubBefore, TimeStamp: 4, RegionID: "r", Group: "cg", RequestID: "Q", Success: true,
			Beans: []Bean{{MsgID: "M", RetryTimes: 1, ClientHost: "c"}}},
		{Type: SubAfter, TimeStamp: 5, Group: "cg", RequestID: "Q", CostTime: 6, Success: true,
			ContextCode: ConsumeSuccess, Beans: []Bean{{MsgID: "M", Keys: "k1"}}},
	}
	var body []byte
	for i := range in {
		body = Append(body, &in[i])
	}
	out, err := Decode(string(body))
	if err != nil {
		t.Fatal(err)
	}
	// Decode reads what the format carries: SubBefore has no success flag.
	in[1].Success = false
	if diff := cmp.Diff(in, out); diff != "" {
		t.Fatalf("round trip (-sent +decoded):\n%s", diff)
	}
}

// Records of older and Java clients, as RocketMQ 4.9's TraceDataEncoder reads them: a Pub
// without client host (Java writes 14 fields), one without offset id (13), a SubAfter
// without time stamp and group (7), and an EndTransaction record, which is skipped.
func TestDecodeOlderLayouts(t *testing.T) {
	data := "Pub\x011\x01r\x01pg\x01t\x01M\x01\x01\x01h\x013\x012\x010\x01O\x01true\x02" +
		"Pub\x011\x01r\x01pg\x01t\x01M2\x01\x01\x01h\x013\x012\x010\x01false\x02" +
		"SubAfter\x01Q\x01M\x016\x01true\x01null\x010\x02" +
		"EndTransaction\x011\x01r\x01pg\x01t\x01M\x01\x01\x01h\x010\x01X\x01COMMIT_MESSAGE\x01false\x02"
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []Context{
		{Type: Pub, TimeStamp: 1, RegionID: "r", Group: "pg", CostTime: 2, Success: true,
			Beans: []Bean{{Topic: "t", MsgID: "M", StoreHost: "h", BodyLength: 3, OffsetMsgID: "O"}}},
		{Type: Pub, TimeStamp: 1, RegionID: "r", Group: "pg", CostTime: 2,
			Beans: []Bean{{Topic: "t", MsgID: "M2", StoreHost: "h", BodyLength: 3}}},
		{Type: SubAfter, RequestID: "Q", CostTime: 6, Success: true, Beans: []Bean{{MsgID: "M"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("decoded (-want +got):\n%s", diff)
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	for name, data := range map[string]string{
		"short Pub":        "Pub\x011\x01r\x02",
		"Pub time":         "Pub\x01x\x01r\x01pg\x01t\x01M\x01\x01\x01h\x013\x012\x010\x01O\x01true\x02",
		"Pub message type": "Pub\x011\x01r\x01pg\x01t\x01M\x01\x01\x01h\x013\x012\x019\x01O\x01true\x02",
		"short SubBefore":  "SubBefore\x011\x01r\x02",
		"SubAfter cost":    "SubAfter\x01Q\x01M\x01-\x01true\x01null\x010\x02",
	} {
		if _, err := Decode(data); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add("Pub\x011\x01r\x01pg\x01t\x01M\x01\x01\x01h\x013\x012\x010\x01O\x01true\x01c\x02")
	f.Add("SubBefore\x015\x01r\x01cg\x01REQ\x01ID1\x012\x01null\x0110.0.0.9\x02")
	f.Add("SubAfter\x01REQ\x01ID1\x013\x01false\x01null\x014\x019\x01cg\x02")
	f.Fuzz(func(t *testing.T, data string) {
		out, err := Decode(data)
		if err != nil {
			return
		}
		if len(out) > strings.Count(data, "\x02")+1 {
			t.Fatalf("%d records from %d separators", len(out), strings.Count(data, "\x02"))
		}
		// What decodes encodes to records that decode to the same contexts.
		var body []byte
		for i := range out {
			body = Append(body, &out[i])
		}
		again, err := Decode(string(body))
		if err != nil {
			t.Fatalf("re-encoded %q: %v", body, err)
		}
		if len(again) != len(out) {
			t.Fatalf("%d records, re-encoded %d", len(out), len(again))
		}
	})
}
