package protocol

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestExtraInfoRoundTrip(t *testing.T) {
	e := ExtraInfo{CkQueueOffset: 7, PopTime: 1700000000000, InvisibleTime: 60000, ReviveQid: 3,
		Retry: PopRetryV1, BrokerName: "broker-a", QueueID: 2, QueueOffset: 9}
	s := e.String()
	if s != "7 1700000000000 60000 3 1 broker-a 2 9" {
		t.Fatalf("String = %q", s)
	}
	got, err := ParseExtraInfo(s)
	if err != nil || got != e {
		t.Fatalf("Parse = %+v, %v", got, err)
	}
	if got.RealTopic("T", "G") != "%RETRY%G_T" {
		t.Fatalf("RealTopic = %q", got.RealTopic("T", "G"))
	}
}

func TestExtraInfoHostile(t *testing.T) {
	for _, s := range []string{
		"",
		"1 2 3 4 0 b 5",             // seven fields
		"1 2 3 4 0 b 5 6 7",         // nine
		"1  2 3 4 0 b 5 6",          // double space: empty field
		"-1 2 3 4 0 b 5 6",          // negative
		"1 +2 3 4 0 b 5 6",          // sign
		"1 2 x 4 0 b 5 6",           // not a number
		"1 2 3 4 9 b 5 6",           // retry marker
		"1 2 3 99999999999 0 b 5 6", // reviveQid over int32
		"1 2 3 4 0 b 5 99999999999999999999",
		"1 2 3 4 0 b 5 6" + strings.Repeat(" ", 400),
		strconv.FormatInt(math.MaxInt64, 10) + "0 2 3 4 0 b 5 6",
	} {
		if _, err := ParseExtraInfo(s); err == nil {
			t.Errorf("ParseExtraInfo(%q) accepted", s)
		}
	}
}

func TestExtraInfoField(t *testing.T) {
	for _, c := range []struct {
		s    string
		i    int
		want string
		ok   bool
	}{
		{"7 1700000000000 60000 999 0 broker-a 2 9", 3, "999", true},
		{"7 1700000000000 60000 3 0 broker-a 2 9", 7, "9", true},
		{"7 1", 3, "", false},
		{"7 1 2 3 4 5 6 7", 8, "", false},
		{"7 1 2 3 4 5 6 7", -1, "", false},
		{strings.Repeat("1 ", 200), 3, "", false}, // over MaxExtraInfoLen
	} {
		got, ok := ExtraInfoField(c.s, c.i)
		if got != c.want || ok != c.ok {
			t.Errorf("ExtraInfoField(%.20q, %d) = %q, %v; want %q, %v", c.s, c.i, got, ok, c.want, c.ok)
		}
	}
}

func TestBatchAckBitSetIsJavaForm(t *testing.T) {
	b := BitSetOf(0, 9)
	// java.util.BitSet {0, 9}.toByteArray() is {0x01, 0x02}; fastjson writes it as base64.
	if base64.StdEncoding.EncodeToString(b) != "AQI=" {
		t.Fatalf("bitset bytes %x", b)
	}
	body := (&BatchAckMessageRequestBody{BrokerName: "b", Acks: []BatchAck{{ConsumerGroup: "g", Topic: "t",
		Retry: "0", StartOffset: 5, QueueID: 1, ReviveQueueID: 2, PopTime: 3, InvisibleTime: 4, BitSet: b}}}).Encode()
	want := `{"brokerName":"b","acks":[{"c":"g","t":"t","r":"0","so":5,"q":1,"rq":2,"pt":3,"it":4,"b":"AQI="}]}`
	if string(body) != want {
		t.Fatalf("body %s", body)
	}
	d, err := DecodeBatchAckBody(body)
	if err != nil || !BitSetGet(d.Acks[0].BitSet, 9) || BitSetGet(d.Acks[0].BitSet, 1) || BitSetGet(d.Acks[0].BitSet, 100) {
		t.Fatalf("decode %+v %v", d, err)
	}
	if _, err := DecodeBatchAckBody([]byte(`{"acks":[{"b":"!!"}]}`)); err == nil {
		t.Fatal("bad base64 accepted")
	}
}

// orderCountInfo's per-message entries are keyed as ExtraInfoUtil.getQueueOffsetKeyValueKey
// builds them, beside the per-queue entry older clients read.
func TestOrderCountInfoEntries(t *testing.T) {
	info := AppendQueueOffsetCount("", "T", 3, 7, 2)
	info = AppendQueueOffsetCount(info, PopRetryTopicV1("T", "G"), 0, 12, 0)
	info = AppendOffsetInfo(info, "T", 3, "0")
	if want := "0 qo3%7 2;1 qo0%12 0;0 3 0"; info != want {
		t.Fatalf("orderCountInfo %q, want %q", info, want)
	}
}
