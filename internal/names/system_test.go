package names

import (
	"strings"
	"testing"
)

func TestReserved(t *testing.T) {
	for topic, want := range map[string]bool{
		"TBW102": true, "SCHEDULE_TOPIC_XXXX": true, "OFFSET_MOVED_EVENT": true, "SELF_TEST_TOPIC": true,
		"TRANS_CHECK_MAX_TIME_TOPIC": true, "RMQ_SYS_TRANS_HALF_TOPIC": true, "RMQ_SYS_TRACE_TOPIC": true,
		"RMQ_SYS_ANYTHING": true, "rmq_sys_lower": true,
		"Orders": false, "%RETRY%g": false, "%DLQ%g": false, "TBW1020": false, "RMQ_SY": false,
	} {
		if got := Reserved(topic); got != want {
			t.Errorf("Reserved(%q) = %v, want %v", topic, got, want)
		}
	}
}

func TestRetryAndDLQTopics(t *testing.T) {
	if got := RetryTopic("g"); got != "%RETRY%g" || !IsRetryTopic(got) {
		t.Errorf("RetryTopic(g) = %q", got)
	}
	if got := DLQTopic("g"); got != "%DLQ%g" || IsRetryTopic(got) {
		t.Errorf("DLQTopic(g) = %q", got)
	}
	// The longest consumer group CheckRetryGroup admits still makes a valid retry topic.
	g := strings.Repeat("a", MaxRetryGroupBytes)
	if err := CheckTopic(RetryTopic(g)); err != nil {
		t.Errorf("retry topic of a %d-byte group: %v", len(g), err)
	}
}
