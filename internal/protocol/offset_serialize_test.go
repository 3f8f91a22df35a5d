package protocol

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The broadcasting consumer's offsets.json: written in fastjson's object-key form, read back,
// and read as the Java client writes it (PrettyFormat: tabs, newlines, keys broken over lines).
func TestOffsetSerializeWrapper(t *testing.T) {
	offsets := map[MessageQueue]int64{
		{Topic: "T", BrokerName: "b", QueueID: 1}:        3,
		{Topic: "T", BrokerName: "b", QueueID: 0}:        10,
		{Topic: "A", BrokerName: "z", QueueID: 7}:        0,
		{Topic: "%RETRY%g", BrokerName: "b", QueueID: 0}: 1 << 40,
	}
	got := string(EncodeOffsetSerializeWrapper(offsets))
	want := `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"%RETRY%g"}:1099511627776,` +
		`{"brokerName":"z","queueId":7,"topic":"A"}:0,` +
		`{"brokerName":"b","queueId":0,"topic":"T"}:10,{"brokerName":"b","queueId":1,"topic":"T"}:3}}`
	if got != want {
		t.Fatalf("encoded\n got %s\nwant %s", got, want)
	}
	back, err := DecodeOffsetSerializeWrapper([]byte(got))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(offsets, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	java := "{\n\t\"offsetTable\":{{\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"queueId\":0,\n\t\t\t\"topic\":\"TopicTest\"\n" +
		"\t\t}:250,{\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"queueId\":1,\n\t\t\t\"topic\":\"TopicTest\"\n\t\t}:-1\n\t}\n}"
	fromJava, err := DecodeOffsetSerializeWrapper([]byte(java))
	if err != nil {
		t.Fatal(err)
	}
	wantJava := map[MessageQueue]int64{
		{Topic: "TopicTest", BrokerName: "broker-a", QueueID: 0}: 250,
		{Topic: "TopicTest", BrokerName: "broker-a", QueueID: 1}: -1,
	}
	if diff := cmp.Diff(wantJava, fromJava); diff != "" {
		t.Errorf("Java's pretty form (-want +got):\n%s", diff)
	}

	for in, want := range map[string]int{`{"offsetTable":{}}`: 0, `{}`: 0, string(EncodeOffsetSerializeWrapper(nil)): 0} {
		if m, err := DecodeOffsetSerializeWrapper([]byte(in)); err != nil || len(m) != want {
			t.Errorf("Decode(%s) = %v, %v; want an empty table", in, m, err)
		}
	}
	for _, in := range []string{"", "{", `{"offsetTable":{{"topic":"T"}:"1"}}`, `{"offsetTable":{{"topic":"T"}:1.5}}`,
		`{"offsetTable":[{"topic":"T","offset":1}]}`, `{"offsetTable":{"T":1}}`} {
		if _, err := DecodeOffsetSerializeWrapper([]byte(in)); !errors.Is(err, ErrMalformedBody) {
			t.Errorf("Decode(%q) = %v, want ErrMalformedBody", in, err)
		}
	}
}
