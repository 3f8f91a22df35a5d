package broker

import (
	"testing"
	"time"
)

// Two brokers started on empty stores must not report the same topic-table version: the name
// server keeps a broker's routes when a registration repeats the version it holds, so a broker
// that came back on the same address with a fresh store would keep serving its old routes.
func TestFreshTopicTableVersionCarriesBirthTime(t *testing.T) {
	before := time.Now().UnixMilli()
	tb := startTestBroker(t, nil)
	v := tb.topics.snapshot().DataVersion
	if v.Timestamp < before || v.Timestamp > time.Now().UnixMilli() {
		t.Fatalf("fresh table version %+v, want its timestamp the start time (>= %d)", v, before)
	}
}
