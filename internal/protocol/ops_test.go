package protocol

import (
	"errors"
	"testing"
)

func TestDecodeConsumeStatsList(t *testing.T) {
	body := `{"brokerAddr":"1.2.3.4:10911","consumeStatsList":[{"g1":[{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":5,"consumerOffset":2,"lastTimestamp":0}}}]},{"g2":[]}],"totalDiff":3}`
	l, err := DecodeConsumeStatsList([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if l.BrokerAddr != "1.2.3.4:10911" || l.TotalDiff != 3 || len(l.Groups) != 2 || l.Groups[0].Group != "g1" ||
		l.Groups[0].Stats[0].ConsumeTps != 1.5 || l.Groups[1].Group != "g2" || len(l.Groups[1].Stats) != 0 {
		t.Fatalf("%+v", l)
	}
	o := l.Groups[0].Stats[0].OffsetTable[MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}]
	if o.BrokerOffset != 5 || o.ConsumerOffset != 2 {
		t.Fatalf("offsets %+v", o)
	}
	for _, bad := range []string{``, `[]`, `{"consumeStatsList":{}}`, `{"consumeStatsList":[1]}`, `{"consumeStatsList":[{"g":[{"offsetTable":1}]}]}`,
		`{"consumeStatsList":[`, `{"consumeStatsList":[{}] x}`, `{"totalDiff":"x"}`} {
		if _, err := DecodeConsumeStatsList([]byte(bad)); !errors.Is(err, ErrMalformedBody) {
			t.Errorf("%q: err %v, want ErrMalformedBody", bad, err)
		}
	}
}
