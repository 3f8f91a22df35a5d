package pop

import (
	"encoding/json"
	"testing"
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
