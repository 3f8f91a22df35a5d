package route

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func exampleBody() *RegisterBrokerBody {
	return &RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]TopicConfig{
			"T":      {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: FilterSingleTag},
			"TBW102": {TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: FilterSingleTag, TopicSysFlag: 1, Order: true},
		},
		DataVersion: DataVersion{Timestamp: 1700000000000, Counter: 3},
	}}
}

func TestRegisterBrokerBodyJSON(t *testing.T) {
	b := exampleBody()
	want := `{"topicConfigSerializeWrapper":{"topicConfigTable":{` +
		`"T":{"topicName":"T","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false},` +
		`"TBW102":{"topicName":"TBW102","readQueueNums":8,"writeQueueNums":8,"perm":7,"topicFilterType":"SINGLE_TAG","topicSysFlag":1,"order":true}},` +
		`"dataVersion":{"timestamp":1700000000000,"counter":3}},"filterServerList":[]}`
	if got := string(b.Encode(false)); got != want {
		t.Fatalf("Encode:\n got %s\nwant %s", got, want)
	}
	back, err := DecodeRegisterBrokerBody([]byte(want), false)
	if err != nil {
		t.Fatal(err)
	}
	b.FilterServerList = []string{}
	if diff := cmp.Diff(b, back); diff != "" {
		t.Errorf("decode (-want +got):\n%s", diff)
	}
}

// TestRegisterBrokerBodyApacheJSON decodes the body an Apache 4.x broker sends (fastjson, keys
// sorted, topic name taken from the key when absent).
func TestRegisterBrokerBodyApacheJSON(t *testing.T) {
	body := `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1699999999999},` +
		`"topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"writeQueueNums":2},` +
		`"U":{"perm":4,"readQueueNums":1,"writeQueueNums":1}}}}`
	got, err := DecodeRegisterBrokerBody([]byte(body), false)
	if err != nil {
		t.Fatal(err)
	}
	want := &RegisterBrokerBody{FilterServerList: []string{}, TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
		DataVersion: DataVersion{Timestamp: 1699999999999, Counter: 1},
		TopicConfigTable: map[string]TopicConfig{
			"T": {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 2, Perm: 6, TopicFilterType: FilterSingleTag},
			"U": {TopicName: "U", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 4},
		}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decode (-want +got):\n%s", diff)
	}
}

// javaCompressed builds a compressed body the way Java's RegisterBrokerBody.encode(true) lays it
// out, independently of our encoder.
func javaCompressed(t *testing.T, dv string, topics []string, filters string) []byte {
	t.Helper()
	var raw bytes.Buffer
	put := func(s string) {
		raw.Write(binary.BigEndian.AppendUint32(nil, uint32(len(s))))
		raw.WriteString(s)
	}
	put(dv)
	raw.Write(binary.BigEndian.AppendUint32(nil, uint32(len(topics))))
	for _, s := range topics {
		put(s)
	}
	put(filters)
	var out bytes.Buffer
	zw := zlib.NewWriter(&out)
	zw.Write(raw.Bytes())
	zw.Close()
	return out.Bytes()
}

func TestRegisterBrokerBodyCompressed(t *testing.T) {
	want := &RegisterBrokerBody{FilterServerList: []string{}, TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
		DataVersion: DataVersion{Timestamp: 1700000000000, Counter: 3},
		TopicConfigTable: map[string]TopicConfig{
			"T":      {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: FilterSingleTag},
			"TBW102": {TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: FilterSingleTag},
		}}}
	java := javaCompressed(t, `{"counter":3,"timestamp":1700000000000}`,
		[]string{"TBW102 8 8 7 SINGLE_TAG", "T 4 4 6 SINGLE_TAG"}, `[]`)
	got, err := DecodeRegisterBrokerBody(java, true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decode java form (-want +got):\n%s", diff)
	}
	// Our encoder round-trips, losing topicSysFlag and order as Java's compact form does.
	got, err = DecodeRegisterBrokerBody(exampleBody().Encode(true), true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestRegisterBrokerBodyEmpty(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		got, err := DecodeRegisterBrokerBody(nil, compressed)
		if err != nil {
			t.Fatal(err)
		}
		want := &RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{TopicConfigTable: map[string]TopicConfig{}}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("empty body (-want +got):\n%s", diff)
		}
	}
}

func TestRegisterBrokerBodyMalformed(t *testing.T) {
	full := javaCompressed(t, `{"counter":1,"timestamp":2}`, []string{"T 4 4 6 SINGLE_TAG"}, `[]`)
	var inflated bytes.Buffer
	zr, _ := zlib.NewReader(bytes.NewReader(full))
	inflated.ReadFrom(zr)
	rezip := func(raw []byte) []byte {
		var out bytes.Buffer
		zw := zlib.NewWriter(&out)
		zw.Write(raw)
		zw.Close()
		return out.Bytes()
	}
	cases := []struct {
		name       string
		body       []byte
		compressed bool
	}{
		{"json truncated", []byte(`{"topicConfigSerializeWrapper":{`), false},
		{"json wrong type", []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":"6"}}}}`), false},
		{"not zlib", []byte(`{"topicConfigSerializeWrapper":{}}`), true},
		{"zlib truncated", full[:len(full)-6], true},
		{"inflated truncated", rezip(inflated.Bytes()[:inflated.Len()-3]), true},
		{"bad data version", javaCompressed(t, `{`, nil, `[]`), true},
		{"bad topic line", javaCompressed(t, `{}`, []string{"T 4 4"}, `[]`), true},
		{"bad topic number", javaCompressed(t, `{}`, []string{"T 4 x 6 SINGLE_TAG"}, `[]`), true},
		{"negative count", rezip([]byte{0, 0, 0, 2, '{', '}', 0xff, 0xff, 0xff, 0xff}), true},
		{"huge length", rezip([]byte{0x7f, 0xff, 0xff, 0xff}), true},
		{"count beyond data", rezip([]byte{0, 0, 0, 2, '{', '}', 0x7f, 0xff, 0xff, 0xff}), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeRegisterBrokerBody(c.body, c.compressed)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
	// A filter server list Java could not parse is ignored, as Java does.
	got, err := DecodeRegisterBrokerBody(javaCompressed(t, `{}`, nil, `nope`), true)
	if err != nil || len(got.FilterServerList) != 0 {
		t.Errorf("bad filter list: %v %v", got, err)
	}
}

func TestBodyCRC32(t *testing.T) {
	// java.util.zip.CRC32 of "123456789" is 0xCBF43926; RocketMQ clears the sign bit.
	if got, want := bodyCRC32([]byte("123456789")), int32(0x4BF43926); got != want {
		t.Errorf("bodyCRC32 = %#x, want %#x", got, want)
	}
}

// RocketMQ 5's compact form carries a topic's attributes as a sixth field of JSON; ours writes
// it when a topic has any, and both read it back. Attributes that do not parse are left out.
func TestRegisterBrokerBodyCompressedAttributes(t *testing.T) {
	java := javaCompressed(t, `{"counter":3,"timestamp":1700000000000}`,
		[]string{`F 4 4 6 SINGLE_TAG {"message.type":"FIFO"}`, `P 1 1 6 SINGLE_TAG {}`, `B 1 1 6 SINGLE_TAG {"k":"a`}, `[]`)
	got, err := DecodeRegisterBrokerBody(java, true)
	if err != nil {
		t.Fatal(err)
	}
	table := got.TopicConfigSerializeWrapper.TopicConfigTable
	if diff := cmp.Diff(map[string]string{"message.type": "FIFO"}, table["F"].Attributes); diff != "" {
		t.Errorf("F (-want +got):\n%s", diff)
	}
	if table["P"].Attributes != nil || table["B"].Attributes != nil || table["B"].ReadQueueNums != 1 {
		t.Errorf("P %+v B %+v", table["P"], table["B"])
	}
	b := exampleBody()
	tc := b.TopicConfigSerializeWrapper.TopicConfigTable["T"]
	tc.Attributes = map[string]string{"message.type": "DELAY"}
	b.TopicConfigSerializeWrapper.TopicConfigTable["T"] = tc
	got, err = DecodeRegisterBrokerBody(b.Encode(true), true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tc.Attributes, got.TopicConfigSerializeWrapper.TopicConfigTable["T"].Attributes); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got.TopicConfigSerializeWrapper.TopicConfigTable["TBW102"].Attributes != nil {
		t.Errorf("a topic without attributes gained some")
	}
	// The JSON form carries them as RocketMQ 5's TopicConfig does.
	back, err := DecodeRegisterBrokerBody(b.Encode(false), false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tc.Attributes, back.TopicConfigSerializeWrapper.TopicConfigTable["T"].Attributes); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
}
